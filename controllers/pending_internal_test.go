package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/controllers/checkspec"
)

// TestPendingWait: the grace counts from the first time the reconciler
// asks for the checker's generation, and starts over with a new
// generation; an untracked checker does not wait.
func TestPendingWait(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "new"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const grace = 2 * time.Second
	tr := NewTracker(nil)
	assert.Zero(t, tr.pendingWait(key, start, grace), "untracked")

	tr.track(key, 1, checkspec.Thresholds{Failure: 1, Success: 1})
	assert.Equal(t, grace, tr.pendingWait(key, start, grace), "first asked")
	assert.Equal(t, 500*time.Millisecond, tr.pendingWait(key, start.Add(1500*time.Millisecond), grace))
	assert.Zero(t, tr.pendingWait(key, start.Add(grace), grace), "the grace has passed")
	assert.Zero(t, tr.pendingWait(key, start.Add(time.Minute), grace))

	tr.track(key, 1, checkspec.Thresholds{Failure: 2, Success: 1})
	assert.Zero(t, tr.pendingWait(key, start.Add(time.Minute), grace), "new thresholds, same generation")
	tr.track(key, 2, checkspec.Thresholds{Failure: 2, Success: 1})
	assert.Equal(t, grace, tr.pendingWait(key, start.Add(time.Minute), grace), "a new generation starts over")

	tr.forget(key)
	assert.Zero(t, tr.pendingWait(key, start.Add(time.Minute), grace), "forgotten")
}
