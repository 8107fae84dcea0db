package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// 6. Notify is called for changed outcomes only.
func TestNotifyOnlyOnChangedOutcome(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)
	h.start()

	probeAt := func(i int) {
		t.Helper()
		if i > 0 {
			h.step(10 * time.Second)
		}
		h.waitCalls(i + 1)
		want := t0.Add(time.Duration(i) * 10 * time.Second)
		h.waitLatest(c.Key, func(o scheduler.Outcome) bool { return o.Time.Equal(want) }, "outcome of probe %d", i)
	}
	for i := range 5 { // the same outcome five times (with different durations)
		probeAt(i)
	}
	time.Sleep(settle)
	require.Len(t, h.notified(), 1)

	h.prober.setResult(c.Target.URL(), probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503})
	probeAt(5)
	require.Eventually(t, func() bool { return len(h.notified()) == 2 }, waitFor, poll)
	probeAt(6) // same failure again

	h.stop()
	n := h.notified()
	require.Len(t, n, 2)
	assert.True(t, n[0].OK)
	assert.True(t, n[0].Outcome.Result.Success)
	assert.True(t, n[1].OK)
	assert.Equal(t, probing.ReasonUnexpectedStatus, n[1].Outcome.Result.Reason)
}

// Observer, Snapshot and InFlight: what metrics read.
func TestObserverAndSnapshot(t *testing.T) {
	obs := &recordingObserver{}
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Observer = obs
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)

	st, ok := stateOf(t, h.s, c.Key)
	require.True(t, ok)
	assert.False(t, st.HasOutcome, "no outcome before the first probe")
	assert.Zero(t, st.Counts)

	// The first probe blocks while it is in flight.
	release := h.prober.block(c.Target.URL(), false)
	h.start()
	require.Eventually(t, func() bool { return h.s.InFlight() == 1 }, waitFor, poll)
	release()
	h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true })
	require.Eventually(t, func() bool { return h.s.InFlight() == 0 }, waitFor, poll)
	// The observer is told after the outcome is stored, outside the lock:
	// wait for it, or the next probe may report first.
	require.Eventually(t, func() bool { _, f := obs.get(); return len(f) == 1 }, waitFor, poll)

	// A failing probe, then a change of the check: the counts survive it.
	h.prober.setResult(c.Target.URL(), probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503})
	h.step(10 * time.Second)
	h.waitLatest(c.Key, func(o scheduler.Outcome) bool { return !o.Result.Success })
	c2 := checkN(0, 2, 10*time.Second, "v2")
	h.s.Upsert(c2)
	h.waitLatest(c.Key, func(o scheduler.Outcome) bool { return o.Generation == 2 })

	st, ok = stateOf(t, h.s, c.Key)
	require.True(t, ok)
	assert.True(t, st.HasOutcome)
	assert.Equal(t, int64(2), st.Outcome.Generation)
	assert.Equal(t, scheduler.ProbeCounts{Successes: 2, Failures: 1}, st.Counts)

	// The observer hears of a probe just after its outcome is stored.
	require.Eventually(t, func() bool { _, f := obs.get(); return len(f) == 3 }, waitFor, poll)
	// Observers run outside the lock: the second and third probes may
	// report in either order.
	lags, finished := obs.get()
	assert.True(t, finished[0].Success)
	var failures int
	for _, res := range finished {
		if !res.Success {
			failures++
		}
	}
	assert.Equal(t, 1, failures, "one failed probe, two successes")
	assert.Equal(t, []time.Duration{0, 0, 0}, lags, "the fake clock never moves while a probe is dispatched")

	h.s.Remove(c.Key)
	_, ok = stateOf(t, h.s, c.Key)
	assert.False(t, ok, "Remove forgets the state")
	h.stop()
}

// TestSnapshotOf checks that SnapshotOf copies the checks keep chooses,
// asking it with each check's key and vantage points.
func TestSnapshotOf(t *testing.T) {
	h := newHarness(t, nil)
	var keys []types.NamespacedName
	for i := range 4 {
		c := checkN(i, 1, 10*time.Second, "v1")
		c.VantagePoints = i + 1
		h.s.Upsert(c)
		keys = append(keys, c.Key)
	}
	asked := map[types.NamespacedName]int{}
	states := h.s.SnapshotOf(func(key types.NamespacedName, vantagePoints int) bool {
		asked[key] = vantagePoints
		return vantagePoints%2 == 0
	})
	assert.Equal(t, map[types.NamespacedName]int{keys[0]: 1, keys[1]: 2, keys[2]: 3, keys[3]: 4}, asked)
	var kept []types.NamespacedName
	for _, st := range states {
		kept = append(kept, st.Key)
	}
	assert.ElementsMatch(t, []types.NamespacedName{keys[1], keys[3]}, kept)
	assert.Len(t, h.s.SnapshotOf(nil), 4, "nil keeps every check")
}

// A probe that starts late reports its lag.
func TestObserverLag(t *testing.T) {
	obs := &recordingObserver{}
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Observer = obs
		o.Workers = 1
	})
	a, b := checkN(0, 1, 10*time.Second, "v1"), checkN(1, 1, 10*time.Second, "v1")
	release := h.prober.block(a.Target.URL(), false)
	h.s.Upsert(a)
	h.start()
	h.waitCallsTo(a.Target.URL(), 1)
	h.s.Upsert(b) // due now, but the only worker is busy
	h.clock.Step(3 * time.Second)
	release()
	h.waitCallsTo(b.Target.URL(), 1)
	require.Eventually(t, func() bool { _, f := obs.get(); return len(f) == 2 }, waitFor, poll)
	lags, _ := obs.get()
	assert.Equal(t, []time.Duration{0, 3 * time.Second}, lags)
	h.stop()
}
