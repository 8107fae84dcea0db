package scheduler_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// TestProbeStartedBeforeTheStopFinishes: a probe in flight when Start's
// context ends is given scheduler.StopGrace to finish instead of being
// cancelled with it. Its turn counts as started (StoppedProbing reports an
// instant after it, so that no other replica makes it up): were the probe
// cancelled before its request left, that turn would be probed by nobody.
// A probe that outlasts the grace is cancelled.
func TestProbeStartedBeforeTheStopFinishes(t *testing.T) {
	for name, tc := range map[string]struct {
		takes         time.Duration
		wantCancelled bool
	}{
		"finishes within the grace": {takes: 100 * time.Millisecond},
		"outlasts the grace":        {takes: scheduler.StopGrace + 10*time.Second, wantCancelled: true},
	} {
		t.Run(name, func(t *testing.T) {
			entered := make(chan struct{})
			var once sync.Once
			var finished, cancelled atomic.Bool
			h := newHarness(t, func(_ *harness, o *scheduler.Options) {
				o.Rand = zeroRand
				o.Prober = probing.ProberFunc(func(ctx context.Context, _ probing.Target) probing.Result {
					once.Do(func() { close(entered) })
					select {
					case <-time.After(tc.takes):
						finished.Store(true)
					case <-ctx.Done():
						cancelled.Store(true)
					}
					return probing.Result{Success: true, Reason: probing.ReasonSucceeded}
				})
			})
			h.s.Upsert(checkN(0, 1, 10*time.Second, "v1"))
			h.start()
			select {
			case <-entered:
			case <-time.After(waitFor):
				t.Fatal("the check was not probed")
			}
			started := time.Now()
			h.stop()
			assert.Equal(t, tc.wantCancelled, cancelled.Load(), "cancelled")
			assert.Equal(t, !tc.wantCancelled, finished.Load(), "finished")
			if tc.wantCancelled {
				assert.GreaterOrEqual(t, time.Since(started), scheduler.StopGrace, "cancelled before the grace was over")
			}
			at, ok := h.s.StoppedProbing(context.Background())
			require.True(t, ok)
			assert.True(t, at.After(t0) || at.Equal(t0), "the probed turn (due %s) counts as started: stopped at %s", t0, at)
		})
	}
}

// TestDisownAfterTheStopLetsTheProbeFinish: a replica fences itself once
// its scheduler has stopped starting probes, and the fencing disowns every
// check. A probe in flight then still gets scheduler.StopGrace to reach its
// target, as at any stop: its turn counts as started, so no other replica
// makes it up, and cancelling it would leave that turn probed by nobody
// (seen in the bench: a turn due right before a replica's leaving instant
// was started, then cut 14 ms later). Its result is discarded.
func TestDisownAfterTheStopLetsTheProbeFinish(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var cancelled atomic.Bool
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Prober = probing.ProberFunc(func(ctx context.Context, _ probing.Target) probing.Result {
			once.Do(func() { close(entered) })
			select {
			case <-release:
			case <-ctx.Done():
				cancelled.Store(true)
			}
			return probing.Result{Success: true, Reason: probing.ReasonSucceeded}
		})
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)
	h.start()
	select {
	case <-entered:
	case <-time.After(waitFor):
		t.Fatal("the check was not probed")
	}
	h.cancel() // the stop: Start lets the probe in flight finish
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, ok := h.s.StoppedProbing(ctx)
	require.True(t, ok, "the dispatcher did not stop")
	h.s.Disown(c.Key) // the fencing that follows
	assert.Never(t, cancelled.Load, 100*time.Millisecond, 10*time.Millisecond, "the probe in flight was cancelled by Disown after the stop")
	close(release)
	h.stop()
	assert.False(t, cancelled.Load(), "the probe was cancelled within the grace")
	_, stored := h.s.Latest(c.Key)
	assert.False(t, stored, "the result of a disowned probe was stored")
}

// TestLeavingStartsNoTurnFromTheInstant checks LeaveAt and StartedBefore:
// a replica that leaves at an instant starts the turns due before it
// (StartedBefore is false while one waits for the bound), none due at or
// after it, and StoppedProbing reports that instant.
func TestLeavingStartsNoTurnFromTheInstant(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Workers = 1
	})
	blocker, late := checkN(0, 1, 10*time.Second, "v1"), checkN(1, 1, 10*time.Second, "v1")
	release := h.prober.block(blocker.Target.URL(), false)
	h.s.Upsert(blocker)
	h.start()
	h.waitCalls(1) // the only worker is busy
	h.s.Upsert(late)
	leaveAt := h.clock.Now().Add(5 * time.Second)
	h.s.LeaveAt(leaveAt)
	require.Eventually(t, func() bool { return !h.s.StartedBefore(leaveAt) }, waitFor, poll, "the late turn waits for the worker")
	assert.False(t, h.s.StartedBefore(leaveAt), "a turn due before the instant is not started yet")
	assert.True(t, h.s.StartedBefore(h.clock.Now().Add(-time.Second)), "nothing was due before that")

	release()
	h.waitCallsTo(late.Target.URL(), 1)
	require.Eventually(t, func() bool { return h.s.StartedBefore(leaveAt) }, waitFor, poll, "every turn due before the instant started")

	// The next turns of both, 10 s later, are past the instant: skipped.
	h.step(10 * time.Second)
	h.settle()
	assert.Equal(t, 2, h.prober.numCalls(), "a turn due after the instant was started")

	h.stop()
	at, ok := h.s.StoppedProbing(context.Background())
	require.True(t, ok)
	assert.Equal(t, leaveAt, at, "stopped probing at the instant it left")
}
