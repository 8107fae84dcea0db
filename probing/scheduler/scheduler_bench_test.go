package scheduler_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// BenchmarkDispatch measures the scheduler's overhead per probe: 10,000
// checks come due together every interval (all at phase zero, the clock on
// a whole second) and run on 64 workers through a prober that returns at
// once. Reported as ns and heap allocations per probe.
func BenchmarkDispatch(b *testing.B) {
	const checks = 10_000
	var probes atomic.Int64
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	s, err := scheduler.New(scheduler.Options{
		Prober: probing.ProberFunc(func(context.Context, probing.Target) probing.Result {
			probes.Add(1)
			return probing.Result{Success: true, Reason: probing.ReasonSucceeded}
		}),
		Workers:       64,
		Clock:         clk,
		InitialJitter: -1, // all due at once: the worst case
		Phase:         func(types.NamespacedName, time.Duration) time.Duration { return 0 },
	})
	if err != nil {
		b.Fatal(err)
	}
	for i := range checks {
		s.Upsert(scheduler.Check{
			Key:      types.NamespacedName{Namespace: "bench", Name: fmt.Sprintf("c-%d", i)},
			Interval: time.Second,
			Target:   mustBuild(probing.TargetSpec{URL: "http://127.0.0.1/", Method: "GET", Timeout: 500 * time.Millisecond}),
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	// waitFor waits until n probes ran. The dispatcher may read the clock
	// before a step and arm its timer after it, for a second too late: when
	// nothing moves for a while, the clock is stepped again.
	waitFor := func(n int64) {
		last, stalled := probes.Load(), time.Now()
		for probes.Load() < n {
			time.Sleep(100 * time.Microsecond)
			if now := probes.Load(); now != last {
				last, stalled = now, time.Now()
			} else if time.Since(stalled) > 50*time.Millisecond {
				clk.Step(time.Second)
				stalled = time.Now()
			}
		}
	}
	waitFor(checks) // first round
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	first := probes.Load()
	b.ResetTimer()
	for round := range b.N {
		clk.Step(time.Second)
		waitFor(int64(checks * (round + 2)))
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(probes.Load() - first)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/probe")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/probe")
}

// BenchmarkDispatchSpread measures the scheduler's heap allocations per
// probe when the checks are spread over their interval, as HashPhase
// spreads them, so that the dispatcher waits for its timer before nearly
// every probe. It runs on the real clock: 1,000 checks every 100ms, 100µs
// apart, through a prober that returns at once; an op is one probe, so
// ns/op is paced by the schedule and only allocs/probe is of interest.
func BenchmarkDispatchSpread(b *testing.B) {
	const (
		checks   = 1000
		interval = 100 * time.Millisecond
	)
	var probes atomic.Int64
	phases := make(map[types.NamespacedName]time.Duration, checks)
	s, err := scheduler.New(scheduler.Options{
		Prober: probing.ProberFunc(func(context.Context, probing.Target) probing.Result {
			probes.Add(1)
			return probing.Result{Success: true, Reason: probing.ReasonSucceeded}
		}),
		Workers:       64,
		InitialJitter: -1,
		Phase:         func(key types.NamespacedName, _ time.Duration) time.Duration { return phases[key] },
	})
	if err != nil {
		b.Fatal(err)
	}
	for i := range checks {
		key := types.NamespacedName{Namespace: "bench", Name: fmt.Sprintf("c-%d", i)}
		phases[key] = time.Duration(i) * interval / checks
		s.Upsert(scheduler.Check{
			Key:      key,
			Interval: interval,
			Target:   mustBuild(probing.TargetSpec{URL: "http://127.0.0.1/", Method: "GET", Timeout: 50 * time.Millisecond}),
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	waitFor := func(n int64) {
		for probes.Load() < n {
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(2 * checks) // the first round, at once, and one on the grid
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	first := probes.Load()
	b.ResetTimer()
	waitFor(first + int64(b.N))
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(probes.Load()-first), "allocs/probe")
}

// BenchmarkResume measures Resume over 100,000 checks of which none
// skipped a turn since the instant given, as after a brief fencing of a
// replica that owns a tenth of them: the scan of every check under the
// scheduler's lock is its whole cost (the turns to make up are a few per
// second of fencing).
func BenchmarkResume(b *testing.B) {
	const checks = 100_000
	clk := clocktesting.NewFakeClock(time.Now())
	s, err := scheduler.New(scheduler.Options{
		Prober: probing.ProberFunc(func(context.Context, probing.Target) probing.Result { return probing.Result{} }),
		Clock:  clk,
	})
	if err != nil {
		b.Fatal(err)
	}
	for i := range checks {
		s.Upsert(scheduler.Check{Key: types.NamespacedName{Namespace: "bench", Name: fmt.Sprintf("c-%d", i)}, Generation: 1, Interval: time.Minute})
	}
	since := clk.Now()
	for b.Loop() {
		s.Resume(since)
	}
}

// BenchmarkKeptCheckBytes measures what the schedule holds for a check its
// replica does not probe, which every replica keeps for every checker so
// that a hand-over waits for nothing: 100,000 checks without targets, as
// the reconciler upserts them for the checkers probed elsewhere, each on
// its grid with one turn queued. Reported as bytes of live heap per check
// (after a garbage collection), with the names shared as the informer's
// cache shares them; an op is one such schedule built and dropped.
func BenchmarkKeptCheckBytes(b *testing.B) {
	const checks = 100_000
	keys := make([]types.NamespacedName, checks)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: "team-a", Name: fmt.Sprintf("wc-%06d", i)}
	}
	var perCheck float64
	for b.Loop() {
		before := liveHeap()
		s, err := scheduler.New(scheduler.Options{
			Prober: probing.ProberFunc(func(_ context.Context, _ probing.Target) probing.Result { return probing.Result{} }),
			Clock:  clocktesting.NewFakeClock(time.Now()),
			Owns:   func(types.NamespacedName, int, time.Time) bool { return false },
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, key := range keys {
			s.Upsert(scheduler.Check{Key: key, Generation: 1, Interval: time.Minute, VantagePoints: 1})
		}
		perCheck = (float64(liveHeap()) - float64(before)) / checks
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perCheck, "B/check")
}
