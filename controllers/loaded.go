package controllers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Loaded tells when the reconciler has planned every WebChecker that
// existed when the replica started: each is then scheduled (owned or not),
// so its turns are on the grid and those skipped while not owned are
// remembered. A replica joins the ring only then: until it does, the
// others keep probing its share, and what it gains it probes at its next
// phase (or makes up a turn the hand-over may have cost) rather than at
// once as a new checker, which would probe twice what its previous owner
// had just probed.
//
// It remembers the keys planned until Wait has seen every key listed;
// after that it holds nothing.
type Loaded struct {
	// done is set once Wait has returned: from then on a reconcile costs
	// one atomic load here.
	done    atomic.Bool
	mu      sync.Mutex
	planned map[types.NamespacedName]struct{}
}

// NewLoaded returns a Loaded that has seen nothing planned.
func NewLoaded() *Loaded {
	return &Loaded{planned: map[types.NamespacedName]struct{}{}}
}

// plannedKey records that the reconciler has scheduled (or unscheduled) key.
func (l *Loaded) plannedKey(key types.NamespacedName) {
	if l == nil || l.done.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.planned != nil {
		l.planned[key] = struct{}{}
	}
}

// Wait returns once every key keys lists (called once, after the cache
// has synced) has been planned, polling every 100 ms, or after limit with
// an error naming how many were not. ctx ending ends it with ctx's error.
func (l *Loaded) Wait(ctx context.Context, keys func(context.Context) ([]types.NamespacedName, error), limit time.Duration) error {
	listed, err := keys(ctx)
	if err != nil {
		return fmt.Errorf("listing the checkers to load: %w", err)
	}
	missing := len(listed)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, limit, true, func(context.Context) (bool, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		remaining := listed[:0]
		for _, key := range listed {
			if _, ok := l.planned[key]; !ok {
				remaining = append(remaining, key)
			}
		}
		listed, missing = remaining, len(remaining)
		return missing == 0, nil
	})
	l.mu.Lock()
	l.planned = nil
	l.mu.Unlock()
	l.done.Store(true)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%d checkers not scheduled after %s: %w", missing, limit, err)
	}
	return err
}
