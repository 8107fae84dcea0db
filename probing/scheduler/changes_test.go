package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// 4. Remove cancels the probe in flight, discards its result and stops
// further probes.
func TestRemoveStopsProbes(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	gone, kept := checkN(0, 1, 10*time.Second, "v1"), checkN(1, 1, 10*time.Second, "v1")
	release := h.prober.block(gone.Target.URL(), false)
	defer release()
	h.s.Upsert(gone)
	h.s.Upsert(kept)
	h.start()
	h.waitCallsTo(gone.Target.URL(), 1)
	h.waitCallsTo(kept.Target.URL(), 1)

	h.s.Remove(gone.Key)
	require.Eventually(t, func() bool { return h.prober.cancelledCount(gone.Target.URL()) == 1 }, waitFor, poll,
		"the probe in flight must be cancelled at once")
	assert.Equal(t, 1, h.s.Len())

	for i := 1; i <= 3; i++ {
		h.step(10 * time.Second)
		h.waitCallsTo(kept.Target.URL(), i+1)
	}
	h.settle()
	assert.Len(t, h.prober.callsTo(gone.Target.URL()), 1, "no probes after Remove")

	// Removing a check that is not in flight stops it too.
	h.s.Remove(kept.Key)
	assert.Zero(t, h.s.Len())
	for range 3 {
		h.clock.Step(10 * time.Second)
		time.Sleep(settle)
	}
	assert.Len(t, h.prober.callsTo(kept.Target.URL()), 4)

	// Once Start has returned every worker is done: the late result of the
	// cancelled probe was neither stored nor notified.
	h.stop()
	_, ok := h.s.Latest(gone.Key)
	assert.False(t, ok)
	for _, n := range h.notified() {
		assert.NotEqual(t, gone.Key, n.Key, "late result of a removed check notified")
	}
}

// 5. An Upsert that changes a check cancels its probe, forgets its outcome
// and probes the new target; an identical Upsert changes nothing.
func TestUpsertChangedCheck(t *testing.T) {
	var rands atomic.Int64
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = func(int64) int64 { rands.Add(1); return 0 }
	})
	v1, v2 := checkN(0, 1, 10*time.Second, "v1"), checkN(0, 2, 10*time.Second, "v2")
	h.prober.setResult(v2.Target.URL(), probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "503", StatusCode: 503})
	h.s.Upsert(v1)
	h.start()

	// A first v1 outcome is stored, then v1 hangs on its next turn.
	h.waitCalls(1)
	h.waitLatest(v1.Key, func(o scheduler.Outcome) bool { return o.Generation == 1 }, "v1 outcome")
	require.Eventually(t, func() bool { return len(h.notified()) == 1 }, waitFor, poll)
	release := h.prober.block(v1.Target.URL(), false)
	defer release()
	h.step(10 * time.Second)
	h.waitCalls(2)

	h.s.Upsert(v2)
	require.Eventually(t, func() bool { return h.prober.cancelledCount(v1.Target.URL()) == 1 }, waitFor, poll,
		"the v1 probe in flight must be cancelled")
	if out, ok := h.s.Latest(v1.Key); ok { // the v2 probe may already be done
		assert.Equal(t, int64(2), out.Generation, "the v1 outcome is forgotten")
	}

	// The new first probe is due at once (jitter 0), without a clock step.
	h.waitCallsTo(v2.Target.URL(), 1)
	assert.Equal(t, t0.Add(10*time.Second), h.prober.callsTo(v2.Target.URL())[0].At)
	out := h.waitLatest(v2.Key, func(o scheduler.Outcome) bool { return o.Generation == 2 }, "v2 outcome")
	assert.Equal(t, probing.ReasonUnexpectedStatus, out.Result.Reason)
	require.Eventually(t, func() bool { return len(h.notified()) == 2 }, waitFor, poll)

	// Identical Upsert (a fresh but equal Target): no reschedule, no
	// jitter drawn, outcome kept.
	require.Equal(t, int64(2), rands.Load())
	h.s.Upsert(checkN(0, 2, 10*time.Second, "v2"))
	h.settle()
	assert.Equal(t, int64(2), rands.Load())
	assert.Len(t, h.prober.callsTo(v2.Target.URL()), 1, "identical Upsert must not reprobe")
	again, ok := h.s.Latest(v2.Key)
	require.True(t, ok)
	assert.Equal(t, out, again)

	h.step(9 * time.Second)
	h.settle()
	assert.Len(t, h.prober.callsTo(v2.Target.URL()), 1)
	h.step(time.Second)
	h.waitCallsTo(v2.Target.URL(), 2)
	assert.Equal(t, t0.Add(20*time.Second), h.prober.callsTo(v2.Target.URL())[1].At)

	h.stop()
	assert.Len(t, h.prober.callsTo(v1.Target.URL()), 2)
	n := h.notified()
	require.Len(t, n, 2, "v1 first outcome, v2 first outcome")
	assert.Equal(t, int64(1), n[0].Outcome.Generation)
	assert.True(t, n[0].Outcome.Result.Success)
	assert.Equal(t, int64(2), n[1].Outcome.Generation)
	assert.Equal(t, probing.ReasonUnexpectedStatus, n[1].Outcome.Result.Reason)
	assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(v1.Target.URL())))
}

// A changed check whose old probe is slow to honour cancellation: the new
// target is not probed while the old probe still runs, and is probed as
// soon as it returns.
func TestUpsertWaitsForCancelledProbe(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	v1, v2 := checkN(0, 1, 10*time.Second, "v1"), checkN(0, 2, 10*time.Second, "v2")
	release := h.prober.block(v1.Target.URL(), true)
	defer release()
	h.s.Upsert(v1)
	h.start()
	h.waitCalls(1)

	h.s.Upsert(v2)
	time.Sleep(settle) // (nothing is queued: the v2 turn waits for the v1 probe)
	assert.Empty(t, h.prober.callsTo(v2.Target.URL()), "no overlap with the cancelled probe")

	release()
	h.waitCallsTo(v2.Target.URL(), 1)
	assert.Equal(t, t0, h.prober.callsTo(v2.Target.URL())[0].At)
	h.waitLatest(v2.Key, func(o scheduler.Outcome) bool { return o.Generation == 2 }, "v2 outcome")
	assert.Equal(t, 1, h.prober.cancelledCount(v1.Target.URL()))
	assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(v1.Target.URL())))

	h.stop()
	for _, n := range h.notified() {
		assert.Equal(t, int64(2), n.Outcome.Generation, "the v1 result must never be stored")
	}
}

// 8. Start returns after its context is cancelled, having cancelled the
// probes in flight and waited for every goroutine, including one blocked in
// Notify.
func TestStartReturnsAfterCancel(t *testing.T) {
	const hung = 5
	var inNotify, outOfNotify atomic.Int64
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Notify = func(ctx context.Context, _ types.NamespacedName) {
			inNotify.Add(1)
			defer outOfNotify.Add(1)
			<-ctx.Done() // a consumer that never reads
		}
	})
	for i := range hung {
		c := checkN(i, 1, 10*time.Second, "v1")
		release := h.prober.block(c.Target.URL(), false)
		defer release()
		h.s.Upsert(c)
	}
	h.s.Upsert(checkN(hung, 1, 10*time.Second, "v1")) // completes, then blocks in Notify
	h.start()
	h.waitCalls(hung + 1)
	require.Eventually(t, func() bool { return inNotify.Load() == 1 }, waitFor, poll)
	require.Equal(t, int64(hung), h.prober.active.Load())

	h.stop()
	assert.Zero(t, h.prober.active.Load(), "probes still running after Start returned")
	assert.Equal(t, int64(1), outOfNotify.Load(), "Notify still running after Start returned")
	wgDone := make(chan struct{})
	go func() { h.prober.running.Wait(); close(wgDone) }()
	select {
	case <-wgDone:
	case <-time.After(waitFor):
		t.Fatal("prober goroutines left running")
	}
	for i := range hung {
		assert.Equal(t, 1, h.prober.cancelledCount(urlN(i, "v1")), "probe %d cancelled", i)
		_, ok := h.s.Latest(keyN(i))
		assert.False(t, ok, "result of a probe cancelled by shutdown stored")
	}
}
