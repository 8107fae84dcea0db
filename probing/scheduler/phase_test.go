package scheduler_test

import (
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing/scheduler"
)

// dueObserver records the due time of every probe that starts. The tests
// that use it never move the clock while a probe runs (see runUntil), so
// now - lag is the exact due time.
type dueObserver struct {
	now func() time.Time

	mu   sync.Mutex
	dues map[types.NamespacedName][]time.Time
}

func newDueObserver(now func() time.Time) *dueObserver {
	return &dueObserver{now: now, dues: map[types.NamespacedName][]time.Time{}}
}

func (o *dueObserver) ProbeStarted(key types.NamespacedName, lag time.Duration) {
	due := o.now().Add(-lag)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dues[key] = append(o.dues[key], due)
}

func (o *dueObserver) ProbeFinished(scheduler.Outcome) {}

func (o *dueObserver) of(key types.NamespacedName) []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Time(nil), o.dues[key]...)
}

// runUntil steps the clock by step until end. After each step it waits
// until the dispatcher sleeps again and every probe it started has
// returned. It relies on nothing being set aside (few checks per
// namespace, or NamespaceShare 1 and enough workers).
func (h *harness) runUntil(end time.Time, step time.Duration) {
	h.t.Helper()
	for h.clock.Now().Before(end) {
		h.step(min(step, end.Sub(h.clock.Now())))
		h.waitIdle()
		require.Eventually(h.t, func() bool { return h.s.InFlight() == 0 }, waitFor, poll, "probes still running at %v", h.clock.Now())
	}
	h.waitIdle()
}

// offsetOf returns the phase of t on a grid of interval: its offset from the
// Unix epoch modulo interval.
func offsetOf(t time.Time, interval time.Duration) time.Duration {
	return time.Duration(t.UnixNano() % int64(interval))
}

// A new check is probed within the initial jitter, then at the first grid
// point at least half an interval later, then one interval after that.
func TestFirstProbeThenGrid(t *testing.T) {
	const interval = 10 * time.Second
	ms := time.Millisecond
	for name, tc := range map[string]struct {
		jitter, offset time.Duration
		second         time.Duration // after t0
	}{
		"offset 0":                         {300 * ms, 0, 10 * time.Second},
		"offset just after the first":      {300 * ms, 400 * ms, 10400 * ms},
		"grid point exactly half later":    {300 * ms, 5300 * ms, 5300 * ms},
		"grid point just under half later": {300 * ms, 5299 * ms, 15299 * ms},
		"late offset":                      {300 * ms, 9900 * ms, 9900 * ms},
		"no jitter, offset 0":              {0, 0, 10 * time.Second},
		"no jitter, offset 5s":             {0, 5 * time.Second, 5 * time.Second},
		"negative offset, reduced":         {300 * ms, -4700 * ms, 5300 * ms},
		"offset beyond the interval":       {300 * ms, 19900 * ms, 9900 * ms},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(_ *harness, o *scheduler.Options) {
				o.Rand = func(int64) int64 { return int64(tc.jitter) }
				o.Phase = func(types.NamespacedName, time.Duration) time.Duration { return tc.offset }
			})
			c := checkN(0, 1, interval, "v1")
			h.s.Upsert(c)
			h.start()
			if tc.jitter > 0 {
				h.step(tc.jitter - 1)
				h.settle()
				require.Zero(t, h.prober.numCalls(), "not before the jitter")
				h.step(1)
			}
			h.waitCalls(1)
			require.Equal(t, t0.Add(tc.jitter), h.prober.allCalls()[0].At, "first probe")

			second := t0.Add(tc.second)
			h.step(second.Sub(h.clock.Now()) - 1)
			h.settle()
			require.Equal(t, 1, h.prober.numCalls(), "no probe before the grid point")
			h.step(1)
			h.waitCalls(2)
			assert.Equal(t, second, h.prober.allCalls()[1].At, "second probe")

			h.step(interval)
			h.waitCalls(3)
			assert.Equal(t, second.Add(interval), h.prober.allCalls()[2].At, "third probe")
		})
	}
}

// Two replicas on the same clock put a check on the same grid, whenever
// and with whatever jitter each added it, and a check removed and added
// again (a hand-over) keeps its grid.
func TestPhaseStableAcrossReplicasAndHandOver(t *testing.T) {
	const interval, n = 10 * time.Second, 20
	replica := func(jitter time.Duration) (*harness, *dueObserver) {
		var obs *dueObserver
		h := newHarness(t, func(h *harness, o *scheduler.Options) {
			obs = newDueObserver(h.clock.Now)
			o.Observer = obs
			o.Phase = nil // the default, HashPhase
			o.Rand = func(int64) int64 { return int64(jitter) }
			o.Logger = logr.Discard()
		})
		return h, obs
	}
	a, obsA := replica(0)
	b, obsB := replica(700 * time.Millisecond)
	for i := range n + 1 { // check n stays on a: its dispatcher keeps a timer
		a.s.Upsert(checkN(i, 1, interval, "v1"))
	}
	b.clock.SetTime(t0.Add(3300 * time.Millisecond)) // b sees the checks later
	for i := range n {
		b.s.Upsert(checkN(i, 1, interval, "v1"))
	}
	a.start()
	b.start()
	a.runUntil(t0.Add(23*time.Second), 100*time.Millisecond)
	b.runUntil(t0.Add(60*time.Second), 100*time.Millisecond)

	// A hand-over: a forgets the checks and is given them back.
	before := map[types.NamespacedName]int{}
	for i := range n {
		a.s.Remove(keyN(i))
		before[keyN(i)] = len(obsA.of(keyN(i)))
	}
	a.runUntil(t0.Add(31*time.Second), 100*time.Millisecond)
	for i := range n {
		a.s.Upsert(checkN(i, 1, interval, "v1"))
	}
	a.runUntil(t0.Add(60*time.Second), 100*time.Millisecond)

	for i := range n {
		key, want := keyN(i), scheduler.HashPhase(keyN(i), interval)
		dA := obsA.of(key)
		// Every probe but the first of each stretch (it is jittered) is on
		// the check's grid.
		for r, dues := range map[string][]time.Time{"a": dA[:before[key]], "a after the hand-over": dA[before[key]:], "b": obsB.of(key)} {
			require.GreaterOrEqual(t, len(dues), 2, "replica %s, check %d", r, i)
			for _, due := range dues[1:] {
				assert.Equal(t, want, offsetOf(due, interval), "replica %s, check %d: due %v off the grid", r, i, due)
			}
		}
	}
}

// Ten thousand checks created at once are spread evenly over the interval
// from their second probe on: no second of an interval holds much more than
// its share of their probes, and each is probed once per interval.
func TestManyChecksSpreadOverInterval(t *testing.T) {
	const n, interval = 10_000, 10 * time.Second
	const share = n / int(interval/time.Second) // probes per second on average
	var obs *dueObserver
	h := newHarness(t, func(h *harness, o *scheduler.Options) {
		obs = newDueObserver(h.clock.Now)
		o.Observer = obs
		o.Phase = nil // the default, HashPhase
		o.Workers = n // never wait for a worker: due times are dispatch times
		o.NamespaceShare = 1
		o.Notify = nil
		o.Logger = logr.Discard()
	})
	for i := range n {
		h.s.Upsert(checkN(i, 1, interval, "v1"))
	}
	h.start()
	from := t0.Add(2 * interval) // the first probes (jittered) and the second ones are done
	h.runUntil(from.Add(2*interval), time.Second)

	for w := range 2 {
		start := from.Add(time.Duration(w) * interval)
		perSecond := make([]int, interval/time.Second)
		for i := range n {
			var in []time.Time
			for _, due := range obs.of(keyN(i)) {
				if !due.Before(start) && due.Before(start.Add(interval)) {
					in = append(in, due)
				}
			}
			require.Len(t, in, 1, "interval %d: check %d not probed exactly once", w, i)
			perSecond[in[0].Sub(start)/time.Second]++
		}
		t.Logf("interval %d: probes per second %v (max %d, share %d)", w, perSecond, maxOf(perSecond), share)
		assert.LessOrEqual(t, maxOf(perSecond), 2*share, "interval %d: a second holds more than twice its share", w)
	}
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
