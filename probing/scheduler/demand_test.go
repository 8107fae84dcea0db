package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Concurrency that follows demand: probes that take long on the fake
// clock, the bound on probes in flight, and the reports of what cannot be
// kept (Outcome.Behind, Outcome.Overran, Scheduler.Load).

// slowProber holds every probe until the fake clock has moved its
// duration past the probe's start and release is called: a target that
// answers after that long, on the fake clock. It never touches the
// network.
type slowProber struct {
	clock *clocktesting.FakeClock
	// duration is how long the probe of url takes; n counts its probes,
	// from 1.
	duration func(url string, n int) time.Duration

	entered, returned atomic.Int64

	mu        sync.Mutex
	pending   []heldProbe
	starts    map[string][]time.Time
	active    int
	maxActive int
}

type heldProbe struct {
	until   time.Time
	release chan struct{}
}

func newSlowProber(clk *clocktesting.FakeClock, duration func(url string, n int) time.Duration) *slowProber {
	return &slowProber{clock: clk, duration: duration, starts: map[string][]time.Time{}}
}

func (p *slowProber) Probe(ctx context.Context, target probing.Target) probing.Result {
	release := make(chan struct{})
	p.mu.Lock()
	now := p.clock.Now()
	url := target.URL()
	p.starts[url] = append(p.starts[url], now)
	p.pending = append(p.pending, heldProbe{until: now.Add(p.duration(url, len(p.starts[url]))), release: release})
	p.active++
	p.maxActive = max(p.maxActive, p.active)
	p.mu.Unlock()
	p.entered.Add(1)
	defer p.returned.Add(1)

	select {
	case <-release:
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.active--
	p.mu.Unlock()
	return probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}
}

// release lets every probe return whose duration has passed on the fake
// clock (all of them when all is set), and returns how many it released.
func (p *slowProber) release(all bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	now, kept, n := p.clock.Now(), p.pending[:0], 0
	for _, h := range p.pending {
		if all || !h.until.After(now) {
			close(h.release)
			n++
		} else {
			kept = append(kept, h)
		}
	}
	clear(p.pending[len(kept):])
	p.pending = kept
	return n
}

func (p *slowProber) inFlight() (active, maxActive int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active, p.maxActive
}

func (p *slowProber) startsOf(url string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.starts[url]...)
}

// countingObserver counts the probes started and finished.
type countingObserver struct{ started, finished atomic.Int64 }

func (o *countingObserver) ProbeStarted(types.NamespacedName, time.Duration) { o.started.Add(1) }
func (o *countingObserver) ProbeFinished(scheduler.Outcome)                  { o.finished.Add(1) }

// demandRig runs a Scheduler on a fake clock with a slowProber, and steps
// the clock only once the scheduler is quiet: every probe due has been
// started and has reached the prober, every probe released has stored
// its outcome, and the dispatcher sleeps on its timer (the prober waits on
// no timer of the fake clock, so the dispatcher's is the only one) or
// waits for the bound.
type demandRig struct {
	t        *testing.T
	clock    *clocktesting.FakeClock
	prober   *slowProber
	observer *countingObserver
	s        *scheduler.Scheduler
	released int64
}

func newDemandRig(t *testing.T, duration func(url string, n int) time.Duration, configure func(o *scheduler.Options)) *demandRig {
	t.Helper()
	r := &demandRig{t: t, clock: clocktesting.NewFakeClock(t0), observer: &countingObserver{}}
	r.prober = newSlowProber(r.clock, duration)
	opts := scheduler.Options{
		Prober:        r.prober,
		Clock:         r.clock,
		Observer:      r.observer,
		Phase:         zeroPhase,
		InitialJitter: -1,
		Logger:        logr.Discard(),
	}
	if configure != nil {
		configure(&opts)
	}
	s, err := scheduler.New(opts)
	require.NoError(t, err)
	r.s = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		r.prober.release(true)
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(waitFor):
			t.Error("Start did not return")
		}
	})
	go func() { done <- s.Start(ctx) }()
	return r
}

// quiet waits until the scheduler has done everything the fake clock's
// present asks for.
func (r *demandRig) quiet() {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		return r.observer.finished.Load() == r.released &&
			(r.clock.HasWaiters() || r.s.Load().Saturated) &&
			r.prober.entered.Load()-r.prober.returned.Load() == int64(r.s.InFlight())
	}, waitFor, poll, "scheduler never quiet")
}

// Probes started are in flight (Scheduler.InFlight) from before their
// worker runs; they have reached the prober when it holds as many.

// step moves the fake clock by d once the scheduler is quiet, releases
// the probes whose time has come, and waits until it is quiet again.
func (r *demandRig) step(d time.Duration) {
	r.t.Helper()
	r.quiet()
	r.clock.Step(d)
	r.released += int64(r.prober.release(false))
	r.quiet()
}

// TestGridKeptWithSlowProbes: 3,000 checks of one namespace, each probed
// every 10s, whose probes take 1s: 300 probes are in flight at any
// moment, and every check is probed at every point of its grid, without a
// skipped turn and without waiting for the bound. (With the fixed 64
// workers of before, one namespace ran 32 probes at once, 32 probes/s
// instead of 300, and the grid was lost.)
func TestGridKeptWithSlowProbes(t *testing.T) {
	const (
		checks   = 3000
		interval = 10 * time.Second
		probe    = time.Second
		tick     = 100 * time.Millisecond
		warmUp   = 2 * interval // first probes after the jitter, then the grid
		watched  = 3 * interval
	)
	var draws atomic.Int64
	r := newDemandRig(t, func(string, int) time.Duration { return probe }, func(o *scheduler.Options) {
		o.Phase = nil                                                         // HashPhase: the checks spread over the interval
		o.InitialJitter = interval                                            // capped at a quarter interval
		o.Rand = func(n int64) int64 { return draws.Add(1) * 2654435761 % n } // spread, deterministic
	})
	for i := range checks {
		r.s.Upsert(checkN(i, 1, interval, "v1"))
	}

	var inFlight []int
	var atWarmUp scheduler.Load
	for elapsed := time.Duration(0); elapsed < warmUp+watched; elapsed += tick {
		if elapsed == warmUp {
			atWarmUp = r.s.Load()
		}
		r.step(tick)
		if elapsed >= warmUp {
			active, _ := r.prober.inFlight()
			inFlight = append(inFlight, active)
		}
	}

	from, to := t0.Add(warmUp), t0.Add(warmUp+watched)
	lost := 0
	for i := range checks {
		var gaps []time.Duration
		starts := r.prober.startsOf(urlN(i, "v1"))
		for k := 1; k < len(starts); k++ {
			if !starts[k-1].Before(from) && starts[k].Before(to) {
				gaps = append(gaps, starts[k].Sub(starts[k-1]))
			}
		}
		if !assert.Equal(t, []time.Duration{interval, interval}, gaps, "check %d: gaps between probes while watched", i) {
			if lost++; lost > 5 {
				t.Fatal("more checks lost their grid")
			}
		}
	}
	// The counters while watched. The first probes, spread over a quarter
	// interval, keep 1,200 in flight for a while, close to the
	// namespace's share of the budget (1,365 of 24 KiB): a few of them
	// may wait for it, depending on how soon the probes that ended hand
	// back their share.
	load := r.s.Load()
	assert.Zero(t, load.SkippedTurns-atWarmUp.SkippedTurns, "turns skipped")
	assert.Zero(t, load.WaitedTurns-atWarmUp.WaitedTurns, "turns that waited for the bound")
	assert.Zero(t, load.SetAsideTurns-atWarmUp.SetAsideTurns, "turns that waited for the namespace's share")
	assert.Zero(t, load.LateTurns-atWarmUp.LateTurns, "turns started late")
	for i := range checks {
		out, ok := r.s.Latest(keyN(i))
		require.True(t, ok)
		require.False(t, out.Behind || out.Overran, "check %d reported behind or overrunning: %+v", i, out)
	}
	// The probes in flight follow what is due: 300 per second × 1 s, give
	// or take what the hashed phases put into each tick.
	lo, hi := inFlight[0], inFlight[0]
	for _, n := range inFlight {
		lo, hi = min(lo, n), max(hi, n)
	}
	t.Logf("probes in flight while watched: %d to %d; bound %d bytes", lo, hi, load.MemoryBudget)
	assert.GreaterOrEqual(t, lo, 240)
	assert.LessOrEqual(t, hi, 360)
}

// TestInFlightBoundHolds: however many probes are due, no more run at
// once than the bound allows: Options.Workers when set, the memory budget
// by the kinds' costs, a namespace's share of either. The dispatcher then
// waits, and counts the turn that waited.
func TestInFlightBoundHolds(t *testing.T) {
	const mib = 1 << 20
	tests := map[string]struct {
		workers    int
		share      float64
		limit      int64 // Options.MemoryLimit
		scheme     string
		namespaces int
		checks     int
		want       int // probes in flight
		// wantWaited is whether a turn waited for the bound; a turn set
		// aside for its namespace's share waits without it.
		wantWaited, wantSetAside bool
	}{
		"workers":                      {workers: 8, share: 1, scheme: "http", namespaces: 1, checks: 20, want: 8, wantWaited: true},
		"workers below the budget":     {workers: 8, share: 1, scheme: "http", namespaces: 1, checks: 8, want: 8},
		"memory budget, http":          {share: 1, limit: 32 * mib, scheme: "http", namespaces: 1, checks: 400, want: 8 * mib / (24 << 10), wantWaited: true},
		"memory budget, https":         {share: 1, limit: 32 * mib, scheme: "https", namespaces: 1, checks: 200, want: 8 * mib / (76 << 10), wantWaited: true},
		"namespace share of budget":    {share: 0.5, limit: 32 * mib, scheme: "http", namespaces: 1, checks: 200, want: 4 * mib / (24 << 10), wantSetAside: true},
		"two namespaces share budget":  {share: 0.5, limit: 32 * mib, scheme: "http", namespaces: 2, checks: 400, want: 2 * (4 * mib / (24 << 10)), wantSetAside: true},
		"namespace share of workers":   {workers: 8, share: 0.5, scheme: "http", namespaces: 1, checks: 20, want: 4, wantSetAside: true},
		"default budget holds the due": {share: 1, scheme: "http", namespaces: 1, checks: 1000, want: 1000},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newDemandRig(t, func(string, int) time.Duration { return time.Hour }, func(o *scheduler.Options) {
				o.Workers, o.NamespaceShare, o.MemoryLimit = tc.workers, tc.share, tc.limit
			})
			for i := range tc.checks {
				c := checkN(i, 1, time.Minute, "v1")
				c.Key.Namespace = fmt.Sprintf("ns-%d", i%tc.namespaces)
				c.Target = mustBuild(probing.TargetSpec{URL: fmt.Sprintf("%s://checker-%d.example/", tc.scheme, i), Method: "GET", Timeout: time.Minute})
				r.s.Upsert(c)
			}
			require.Eventually(t, func() bool { return r.prober.entered.Load() >= int64(tc.want) }, waitFor, poll, "probes started")
			time.Sleep(settle) // nothing more starts
			active, maxActive := r.prober.inFlight()
			assert.Equal(t, tc.want, active, "probes in flight")
			assert.Equal(t, tc.want, maxActive, "most probes in flight at once")
			load := r.s.Load()
			assert.Equal(t, tc.want, load.InFlight)
			assert.Equal(t, tc.wantWaited, load.WaitedTurns > 0, "a turn waited for the bound: %+v", load)
			assert.Equal(t, tc.wantSetAside, load.SetAsideTurns > 0, "a turn waited for its namespace: %+v", load)
			assert.LessOrEqual(t, load.InFlightBytes, load.MemoryBudget)
		})
	}
}

// TestCannotKeepUpReported: a replica that cannot keep up says so once
// the bound is reached, and not before: the turn that waited is counted
// (Load.WaitedTurns) and its Outcome is Behind, notified as a change; so
// is a probe started later than LateThreshold; the probes that did not
// wait are not Behind.
func TestCannotKeepUpReported(t *testing.T) {
	const workers = 4
	tests := map[string]struct {
		checks int
		// lateBy is how far past their due time the clock is first moved.
		lateBy                   time.Duration
		wantBehind               int // checks whose outcome is Behind
		wantWaited, wantLateTurn uint64
	}{
		"below the bound":          {checks: workers - 1},
		"at the bound":             {checks: workers},
		"one over the bound":       {checks: workers + 1, wantBehind: 1, wantWaited: 1},
		"three over the bound":     {checks: workers + 3, wantBehind: 3, wantWaited: 3},
		"late by the threshold":    {checks: 1, lateBy: scheduler.LateThreshold},
		"later than the threshold": {checks: 1, lateBy: scheduler.LateThreshold + time.Millisecond, wantBehind: 1, wantLateTurn: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			notified := map[types.NamespacedName][]scheduler.Outcome{}
			var s *scheduler.Scheduler
			r := newDemandRig(t, func(string, int) time.Duration { return time.Second }, func(o *scheduler.Options) {
				o.Workers, o.NamespaceShare = workers, 1
				if tc.lateBy > 0 {
					// First due just under a second from now.
					o.InitialJitter = time.Second
					o.Rand = func(n int64) int64 { return n - 1 }
				}
				o.Notify = func(_ context.Context, key types.NamespacedName) {
					out, _ := s.Latest(key)
					mu.Lock()
					defer mu.Unlock()
					notified[key] = append(notified[key], out)
				}
			})
			s = r.s
			for i := range tc.checks {
				r.s.Upsert(checkN(i, 1, time.Minute, "v1"))
			}
			if tc.lateBy > 0 {
				// The clock jumps past the due time by lateBy.
				r.quiet()
				r.clock.Step(time.Second - 1 + tc.lateBy)
			} else {
				// Due at once: the first probes hold the bound and the
				// dispatcher waits for it with the next turn before the
				// clock moves (quiet alone can hold while the dispatcher
				// is still starting them, and a step then frees the bound
				// before any turn waited).
				require.Eventually(t, func() bool {
					load := r.s.Load()
					return load.InFlight == min(tc.checks, workers) && (tc.checks <= workers || load.Saturated)
				}, waitFor, poll, "first probes started: %+v", r.s.Load())
			}
			// Every probe takes a second: step until all have finished. (A
			// dispatcher slow to wake from its wait for the bound may start
			// a probe a step later: that changes none of what is checked.)
			for steps := 0; r.observer.finished.Load() < int64(tc.checks); steps++ {
				require.Less(t, steps, 30, "probes never finished")
				r.step(time.Second)
			}

			behind := 0
			for i := range tc.checks {
				out, ok := r.s.Latest(keyN(i))
				require.True(t, ok)
				if out.Behind {
					behind++
				}
			}
			assert.Equal(t, tc.wantBehind, behind, "checks reported behind")
			load := r.s.Load()
			assert.Equal(t, tc.wantWaited, load.WaitedTurns, "turns that waited for the bound")
			assert.Equal(t, tc.wantLateTurn, load.LateTurns, "late turns")
			assert.Zero(t, load.SkippedTurns)
			// Notify follows the Observer: wait for it.
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(notified) == tc.checks
			}, waitFor, poll, "first outcomes notified")
			time.Sleep(settle)
			mu.Lock()
			defer mu.Unlock()
			for i := range tc.checks {
				assert.Len(t, notified[keyN(i)], 1, "check %d: its first outcome is notified, and only it", i)
			}
		})
	}
}

// TestOverranReported: a check whose probe outlasts its interval has its
// turns skipped (counted in Load.SkippedTurns, never two probes at once);
// the outcome of that probe is Overran, and so are those of the next
// PaceHold intervals, then it is cleared: each change notified once.
func TestOverranReported(t *testing.T) {
	const interval = 10 * time.Second
	var mu sync.Mutex
	var notified []scheduler.Outcome
	var s *scheduler.Scheduler
	r := newDemandRig(t, func(_ string, n int) time.Duration {
		if n == 1 {
			return 25 * time.Second // two turns skipped: t0+10s, t0+20s
		}
		return time.Second
	}, func(o *scheduler.Options) {
		o.Notify = func(_ context.Context, key types.NamespacedName) {
			out, _ := s.Latest(key)
			mu.Lock()
			defer mu.Unlock()
			notified = append(notified, out)
		}
	})
	s = r.s
	r.s.Upsert(checkN(0, 1, interval, "v1"))

	for range 80 {
		r.step(time.Second)
	}
	type seen struct {
		at      time.Duration // after t0, when the probe finished
		overran bool
	}
	var got []seen
	mu.Lock()
	for _, out := range notified {
		got = append(got, seen{at: out.Time.Sub(t0), overran: out.Overran})
	}
	mu.Unlock()
	// The first probe (t0 to t0+25s) overran; the probe at t0+30s is the
	// first PaceHold intervals after it: cleared.
	assert.Equal(t, []seen{{at: 25 * time.Second, overran: true}, {at: 31 * time.Second, overran: false}}, got, "notified outcomes")
	starts := r.prober.startsOf(urlN(0, "v1"))
	require.NotEmpty(t, starts)
	assert.Equal(t, t0.Add(30*time.Second), starts[1], "the next turn after the long probe is the next grid point")
	assert.Equal(t, uint64(2), r.s.Load().SkippedTurns, "turns skipped while the first probe ran")
}
