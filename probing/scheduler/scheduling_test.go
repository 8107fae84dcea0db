package scheduler_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

func TestNew(t *testing.T) {
	noop := probing.ProberFunc(func(context.Context, probing.Target) probing.Result { return probing.Result{} })

	_, err := scheduler.New(scheduler.Options{})
	require.Error(t, err, "missing Prober")

	_, err = scheduler.New(scheduler.Options{Prober: noop, Workers: -1})
	require.Error(t, err, "negative Workers")

	s, err := scheduler.New(scheduler.Options{Prober: noop})
	require.NoError(t, err)
	assert.False(t, s.NeedLeaderElection())
	assert.Zero(t, s.Len())
	_, ok := s.Latest(keyN(0))
	assert.False(t, ok)

	// Upsert and Remove work before Start.
	s.Upsert(checkN(0, 1, time.Minute, "v1"))
	s.Upsert(checkN(0, 1, time.Minute, "v1"))
	s.Upsert(checkN(1, 1, time.Minute, "v1"))
	assert.Equal(t, 2, s.Len())
	s.Remove(keyN(1))
	s.Remove(keyN(7)) // unknown: no-op
	assert.Equal(t, 1, s.Len())

	// Only one of two Start calls runs; the other is refused at once.
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan error, 2)
	go func() { results <- s.Start(ctx) }()
	go func() { results <- s.Start(ctx) }()
	var first error
	select {
	case first = <-results:
	case <-time.After(waitFor):
		t.Fatal("neither Start call returned")
	}
	require.Error(t, first, "second Start must fail at once")
	cancel()
	select {
	case err := <-results:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Start did not return")
	}
}

// 1. Intervals are honoured, drift-free, on the check's grid, without
// backlog bursts.
func TestIntervalsHonoured(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.InitialJitter = -1 // no jitter: first probe at once
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)
	h.start()

	h.waitCalls(1)
	assert.Equal(t, t0, h.prober.allCalls()[0].At)
	out := h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true }, "first outcome")
	assert.Equal(t, t0, out.Time)
	assert.Equal(t, int64(1), out.Generation)
	assert.Equal(t, c.Key, out.Key)

	for i := 1; i <= 5; i++ {
		h.step(9 * time.Second)
		h.settle()
		require.Equal(t, i, h.prober.numCalls(), "no probe before it is due (step %d)", i)

		h.step(time.Second)
		h.waitCalls(i + 1)
		want := t0.Add(time.Duration(i) * 10 * time.Second)
		require.Equal(t, want, h.prober.allCalls()[i].At, "probe %d time", i)
		h.waitLatest(c.Key, func(o scheduler.Outcome) bool { return o.Time.Equal(want) }, "outcome stored")
	}

	// The clock jumps 25s past the due time t0+60s: one probe, no burst of
	// catch-up probes; the next turn is the first grid point at least half
	// an interval after the late probe (t0+85s+5s).
	h.step(35 * time.Second) // now t0+85s
	h.waitCalls(7)
	h.settle()
	require.Equal(t, 7, h.prober.numCalls(), "no backlog burst")
	assert.Equal(t, t0.Add(85*time.Second), h.prober.allCalls()[6].At)

	h.step(4 * time.Second)
	h.settle()
	require.Equal(t, 7, h.prober.numCalls())
	h.step(time.Second) // t0+90s
	h.waitCalls(8)
	assert.Equal(t, t0.Add(90*time.Second), h.prober.allCalls()[7].At)

	// Late by more than half an interval (due t0+100s, probed at t0+107s):
	// the grid point t0+110s is too close, the next turn is t0+120s.
	h.step(17 * time.Second) // now t0+107s
	h.waitCalls(9)
	h.step(12 * time.Second) // t0+119s
	h.settle()
	require.Equal(t, 9, h.prober.numCalls(), "no probe within half an interval of the late one")
	h.step(time.Second) // t0+120s
	h.waitCalls(10)
	assert.Equal(t, t0.Add(120*time.Second), h.prober.allCalls()[9].At)
}

// 2. The first probes of many checks added at once are spread by jitter;
// Owns is asked about each with the check's vantage points and the due
// time of its turn.
func TestInitialJitterSpreadsFirstProbes(t *testing.T) {
	const n = 100
	own := newRecordingOwner()
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.InitialJitter = time.Second
		o.Owns = own.Owns
		o.Logger = logr.Discard()
	})
	vantagePoints := map[types.NamespacedName]int{}
	urlOf := map[types.NamespacedName]string{}
	for i := range n {
		c := checkN(i, 1, time.Hour, "v1")
		c.VantagePoints = 1 + i%5
		vantagePoints[c.Key] = c.VantagePoints
		urlOf[c.Key] = urlN(i, "v1")
		h.s.Upsert(c)
	}
	h.start()

	for range 100 {
		h.waitIdle()
		// Every check the dispatcher dispatched has entered the prober
		// before the clock moves on, so recorded times are exact.
		require.Eventually(t, func() bool { return h.prober.numCalls() == own.count() }, waitFor, poll)
		h.clock.Step(10 * time.Millisecond)
	}
	h.waitCalls(n)

	buckets := map[int64]bool{}
	first := map[string]bool{}
	own.mu.Lock()
	defer own.mu.Unlock()
	due := map[string]time.Time{}
	for key, at := range own.due {
		due[urlOf[key]] = at
	}
	for _, c := range h.prober.allCalls() {
		require.False(t, first[c.URL], "one probe per check: %s", c.URL)
		first[c.URL] = true
		// The clock moves in steps of 10 ms: a turn is probed at most
		// one step after it was due.
		assert.WithinRange(t, due[c.URL], c.At.Add(-10*time.Millisecond), c.At, "Owns asked with the due time of %s", c.URL)
		d := c.At.Sub(t0)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, time.Second)
		buckets[int64(d/(100*time.Millisecond))] = true
	}
	assert.GreaterOrEqual(t, len(buckets), 5, "first probes should spread over [0,1s): buckets %v", buckets)
	assert.Equal(t, vantagePoints, own.asked, "Owns is asked with each check's vantage points")
}

// The jitter is drawn from Options.Rand, bounded by InitialJitter.
func TestInitialJitterFromInjectedRand(t *testing.T) {
	const n = 100
	var mu sync.Mutex
	var bounds []int64
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.InitialJitter = time.Second
		o.Logger = logr.Discard()
		o.Rand = func(bound int64) int64 {
			mu.Lock()
			defer mu.Unlock()
			bounds = append(bounds, bound)
			return int64(len(bounds)-1) * int64(10*time.Millisecond) // i-th check: i*10ms
		}
	})
	for i := range n {
		h.s.Upsert(checkN(i, 1, time.Hour, "v1"))
	}
	h.start()

	for i := range n {
		if i > 0 {
			h.step(10 * time.Millisecond)
		}
		h.waitCalls(i + 1)
		c := h.prober.allCalls()[i]
		require.Equal(t, urlN(i, "v1"), c.URL)
		require.Equal(t, t0.Add(time.Duration(i)*10*time.Millisecond), c.At, "first probe of check %d", i)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bounds, n)
	for _, b := range bounds {
		require.Equal(t, int64(time.Second), b)
	}
}

// The jitter is less than a quarter of the interval.
func TestInitialJitterBoundedByInterval(t *testing.T) {
	var bound atomic.Int64
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.InitialJitter = time.Second
		o.Rand = func(b int64) int64 { bound.Store(b); return b - 1 }
	})
	h.s.Upsert(checkN(0, 1, 1200*time.Millisecond, "v1"))
	assert.Equal(t, int64(300*time.Millisecond), bound.Load(), "jitter < min(InitialJitter, Interval/4)")

	h.start()
	h.step(300*time.Millisecond - 2) // just before the due time
	h.settle()
	require.Zero(t, h.prober.numCalls())
	h.step(1)
	h.waitCalls(1)
	assert.Equal(t, t0.Add(300*time.Millisecond-1), h.prober.allCalls()[0].At)
}

// 3. A checker is never probed twice at once; its turns are skipped while it
// hangs, and other checkers are not held up.
func TestNoOverlappingProbesOfOneChecker(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	slow, fast := checkN(0, 1, 10*time.Second, "v1"), checkN(1, 1, 10*time.Second, "v1")
	release := h.prober.block(slow.Target.URL(), false)
	h.s.Upsert(slow)
	h.s.Upsert(fast)
	h.start()
	h.waitCallsTo(slow.Target.URL(), 1)
	h.waitCallsTo(fast.Target.URL(), 1)

	for i := 1; i <= 4; i++ {
		h.step(10 * time.Second)
		h.waitCallsTo(fast.Target.URL(), i+1)
		h.settle()
		require.Len(t, h.prober.callsTo(slow.Target.URL()), 1, "hung checker must not be probed again")
	}
	assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(slow.Target.URL())))
	_, ok := h.s.Latest(slow.Key)
	assert.False(t, ok)

	release()
	h.waitLatest(slow.Key, func(scheduler.Outcome) bool { return true }, "outcome after release")

	// Its turn at t0+40s was skipped; the next one is t0+50s.
	h.step(10 * time.Second)
	h.waitCallsTo(slow.Target.URL(), 2)
	assert.Equal(t, t0.Add(50*time.Second), h.prober.callsTo(slow.Target.URL())[1].At)
	assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(slow.Target.URL())))
	assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(fast.Target.URL())))
}

// A non-positive Interval cannot make the dispatcher spin: it falls back to
// scheduler.FallbackInterval.
func TestNonPositiveIntervalFallsBack(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	h.s.Upsert(checkN(0, 1, 0, "v1"))
	h.s.Upsert(checkN(0, 1, 0, "v1")) // identical: no-op
	h.start()
	h.waitCalls(1)
	h.step(scheduler.FallbackInterval)
	h.waitCalls(2)
	h.settle()
	require.Equal(t, 2, h.prober.numCalls())
	assert.Equal(t, t0.Add(scheduler.FallbackInterval), h.prober.allCalls()[1].At)
}
