package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

// TestPendingWait: the grace counts from the first time the reconciler
// asks for the checker's generation, and starts over with a new
// generation or once the checker was forgotten.
func TestPendingWait(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "new"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const grace = 2 * time.Second
	l := newLedger()
	assert.Equal(t, grace, l.pendingWait(key, 1, start, grace), "first asked")
	assert.Equal(t, 500*time.Millisecond, l.pendingWait(key, 1, start.Add(1500*time.Millisecond), grace))
	assert.Zero(t, l.pendingWait(key, 1, start.Add(grace), grace), "the grace has passed")
	assert.Zero(t, l.pendingWait(key, 1, start.Add(time.Minute), grace))
	assert.Equal(t, grace, l.pendingWait(key, 2, start.Add(time.Minute), grace), "a new generation starts over")

	l.forget(key)
	assert.Equal(t, grace, l.pendingWait(key, 2, start.Add(2*time.Minute), grace), "forgotten")
}

// TestForeignCopy: a copy written by another replica counts once, and the
// copy this replica's own patch replaced (the cache lags) never counts.
func TestForeignCopy(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "wc"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLedger()
	l.wrote(key, 1, "10", now)
	assert.True(t, l.behindOwnWrite(key, "10"))
	assert.False(t, l.foreignCopy(key, 1, "10"), "the copy our own patch replaced is no take-over")
	assert.True(t, l.foreignCopy(key, 1, "11"))
	assert.False(t, l.foreignCopy(key, 1, "11"), "a copy counted twice")
	assert.True(t, l.foreignCopy(key, 1, "12"))
	assert.False(t, l.behindOwnWrite(key, "12"))
}

// TestDetailWait: a detail-only write waits out the period since this
// replica's last write of the generation.
func TestDetailWait(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "wc"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLedger()
	assert.Zero(t, l.detailWait(key, 1, now, time.Minute), "never written")
	l.wrote(key, 1, "10", now)
	assert.Equal(t, 40*time.Second, l.detailWait(key, 1, now.Add(20*time.Second), time.Minute))
	assert.Zero(t, l.detailWait(key, 1, now.Add(time.Minute), time.Minute))
	assert.Zero(t, l.detailWait(key, 2, now.Add(time.Second), time.Minute), "a new generation")
}
