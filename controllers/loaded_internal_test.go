package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func TestLoadedWaitsForEveryListedChecker(t *testing.T) {
	a, b, c := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}, types.NamespacedName{Namespace: "ns", Name: "c"}
	list := func(keys ...types.NamespacedName) func(context.Context) ([]types.NamespacedName, error) {
		return func(context.Context) ([]types.NamespacedName, error) { return keys, nil }
	}
	tests := []struct {
		name           string
		listed         []types.NamespacedName
		before, during []types.NamespacedName
		wantErr        string
	}{
		{name: "nothing to load", listed: nil},
		{name: "planned before the wait", listed: []types.NamespacedName{a, b}, before: []types.NamespacedName{a, b}},
		{name: "planned during the wait", listed: []types.NamespacedName{a, b, c}, before: []types.NamespacedName{a}, during: []types.NamespacedName{c, b}},
		{name: "one never planned", listed: []types.NamespacedName{a, b, c}, before: []types.NamespacedName{a}, during: []types.NamespacedName{b}, wantErr: "1 checkers not scheduled after 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLoaded()
			for _, k := range tt.before {
				l.plannedKey(k)
			}
			go func() {
				for _, k := range tt.during {
					time.Sleep(50 * time.Millisecond)
					l.plannedKey(k)
				}
			}()
			err := l.Wait(context.Background(), list(tt.listed...), time.Second)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			l.plannedKey(a) // after the wait: nothing is kept
			assert.Nil(t, l.planned)
		})
	}
}

func TestLoadedWaitEnds(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	t.Run("context done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := NewLoaded().Wait(ctx, func(context.Context) ([]types.NamespacedName, error) { return []types.NamespacedName{key}, nil }, time.Minute)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("listing fails", func(t *testing.T) {
		err := NewLoaded().Wait(context.Background(), func(context.Context) ([]types.NamespacedName, error) { return nil, errors.New("cache gone") }, time.Minute)
		assert.ErrorContains(t, err, "listing the checkers to load: cache gone")
	})
}
