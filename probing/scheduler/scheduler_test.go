package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Deadlines are generous: the tests run with -race on two shared cores.
const (
	waitFor = 30 * time.Second
	poll    = time.Millisecond
	// settle is how long a negative assertion ("nothing else happened")
	// waits. It can only make such a test pass wrongly, never fail wrongly.
	settle = 50 * time.Millisecond
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func keyN(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("checker-%d", i)}
}

func urlN(i int, version string) string {
	return fmt.Sprintf("http://checker-%d.example/%s", i, version)
}

func checkN(i int, gen int64, interval time.Duration, version string) scheduler.Check {
	return scheduler.Check{
		Key:        keyN(i),
		Generation: gen,
		Interval:   interval,
		Target: probing.Target{
			URL:                 urlN(i, version),
			Method:              "GET",
			Timeout:             5 * time.Second,
			ExpectedStatusCodes: []int{200, 204},
		},
	}
}

func zeroRand(int64) int64 { return 0 }

// ---------------------------------------------------------------------------
// Fake prober

type probeCall struct {
	URL string
	At  time.Time // fake clock when the prober was entered
}

type gate struct {
	release      chan struct{}
	ignoreCancel bool
}

// fakeProber records every call with its fake time, tracks concurrency per
// checker (URL host), and blocks on demand. It never touches the network.
type fakeProber struct {
	clock   *clocktesting.FakeClock
	running sync.WaitGroup // probes currently inside Probe
	active  atomic.Int64

	mu          sync.Mutex
	calls       []probeCall
	inFlight    map[string]int // by checker
	maxInFlight map[string]int // by checker
	gates       map[string]*gate
	results     map[string]probing.Result
	cancelled   map[string]int // by URL: probes that returned with ctx done
}

func newFakeProber(clk *clocktesting.FakeClock) *fakeProber {
	return &fakeProber{
		clock:       clk,
		inFlight:    map[string]int{},
		maxInFlight: map[string]int{},
		gates:       map[string]*gate{},
		results:     map[string]probing.Result{},
		cancelled:   map[string]int{},
	}
}

func checkerOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	return u.Host
}

func (p *fakeProber) probe(ctx context.Context, target probing.Target) probing.Result {
	p.running.Add(1)
	defer p.running.Done()
	p.active.Add(1)
	defer p.active.Add(-1)

	checker := checkerOf(target.URL)
	p.mu.Lock()
	p.calls = append(p.calls, probeCall{URL: target.URL, At: p.clock.Now()})
	n := len(p.calls)
	p.inFlight[checker]++
	p.maxInFlight[checker] = max(p.maxInFlight[checker], p.inFlight[checker])
	g := p.gates[target.URL]
	res, ok := p.results[target.URL]
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight[checker]--
		p.mu.Unlock()
	}()

	if !ok {
		res = probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}
	}
	// A different duration every time: it must not count as a change.
	res.Duration = time.Duration(n) * time.Millisecond

	if g != nil {
		if g.ignoreCancel {
			<-g.release
		} else {
			select {
			case <-g.release:
			case <-ctx.Done():
			}
		}
	}
	if ctx.Err() != nil {
		p.mu.Lock()
		p.cancelled[target.URL]++
		p.mu.Unlock()
		// A result that would be visible if it were (wrongly) stored.
		return probing.Result{Reason: probing.ReasonTimeout, Message: "late result of a cancelled probe"}
	}
	return res
}

// block makes probes of url wait until the returned function is called (or,
// unless ignoreCancel, until their context is done).
func (p *fakeProber) block(rawURL string, ignoreCancel bool) (release func()) {
	g := &gate{release: make(chan struct{}), ignoreCancel: ignoreCancel}
	p.mu.Lock()
	p.gates[rawURL] = g
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.gates, rawURL)
			p.mu.Unlock()
			close(g.release)
		})
	}
}

func (p *fakeProber) setResult(rawURL string, res probing.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.results[rawURL] = res
}

func (p *fakeProber) allCalls() []probeCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]probeCall(nil), p.calls...)
}

func (p *fakeProber) numCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

func (p *fakeProber) callsTo(rawURL string) []probeCall {
	var out []probeCall
	for _, c := range p.allCalls() {
		if c.URL == rawURL {
			out = append(out, c)
		}
	}
	return out
}

func (p *fakeProber) maxConcurrency(checker string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxInFlight[checker]
}

func (p *fakeProber) cancelledCount(rawURL string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cancelled[rawURL]
}

// ---------------------------------------------------------------------------
// Harness

type notification struct {
	Key     types.NamespacedName
	Outcome scheduler.Outcome // Latest(Key) as seen from inside Notify
	OK      bool
}

type harness struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	prober *fakeProber
	s      *scheduler.Scheduler

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once

	mu            sync.Mutex
	notifications []notification
}

// newHarness builds a Scheduler on a fake clock and a fake prober. Unless
// configure sets them, Notify records notifications (calling Latest from
// inside Notify, as the real consumer does) and Logger is a testr logger.
func newHarness(t *testing.T, configure func(h *harness, o *scheduler.Options)) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	h := &harness{t: t, clock: clk, prober: newFakeProber(clk)}
	opts := scheduler.Options{
		Prober: probing.ProberFunc(h.prober.probe),
		Clock:  clk,
		Notify: h.recordNotify,
		Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1}),
	}
	if configure != nil {
		configure(h, &opts)
	}
	s, err := scheduler.New(opts)
	require.NoError(t, err)
	h.s = s
	return h
}

func (h *harness) recordNotify(_ context.Context, key types.NamespacedName) {
	out, ok := h.s.Latest(key)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notifications = append(h.notifications, notification{Key: key, Outcome: out, OK: ok})
}

func (h *harness) notified() []notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notification(nil), h.notifications...)
}

func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.s.Start(ctx) }()
	h.t.Cleanup(h.stop)
}

// stop cancels the Start context and waits (with a deadline) for Start to
// return.
func (h *harness) stop() {
	h.t.Helper()
	h.stopOnce.Do(func() {
		h.cancel()
		select {
		case err := <-h.done:
			assert.NoError(h.t, err, "Start")
		case <-time.After(waitFor):
			h.t.Fatal("Start did not return after its context was cancelled")
		}
	})
}

// waitIdle waits until the dispatcher sleeps on its timer.
func (h *harness) waitIdle() {
	h.t.Helper()
	require.Eventually(h.t, h.clock.HasWaiters, waitFor, poll, "dispatcher never armed its timer")
}

// step waits until the dispatcher sleeps on its timer, then moves the clock.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.waitIdle()
	h.clock.Step(d)
}

// settle waits until the dispatcher is idle again and a little more, for a
// negative assertion.
func (h *harness) settle() {
	h.t.Helper()
	h.waitIdle()
	time.Sleep(settle)
}

// waitCalls waits until the prober was called exactly n times in total.
func (h *harness) waitCalls(n int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool { return h.prober.numCalls() >= n }, waitFor, poll, "expected %d probes", n)
	require.Equal(h.t, n, h.prober.numCalls(), "probes")
}

func (h *harness) waitCallsTo(rawURL string, n int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool { return len(h.prober.callsTo(rawURL)) >= n }, waitFor, poll, "expected %d probes of %s", n, rawURL)
	require.Len(h.t, h.prober.callsTo(rawURL), n, "probes of %s", rawURL)
}

func (h *harness) waitLatest(key types.NamespacedName, cond func(scheduler.Outcome) bool, msgAndArgs ...any) scheduler.Outcome {
	h.t.Helper()
	var out scheduler.Outcome
	require.Eventually(h.t, func() bool {
		o, ok := h.s.Latest(key)
		if ok && cond(o) {
			out = o
			return true
		}
		return false
	}, waitFor, poll, msgAndArgs...)
	return out
}

// ---------------------------------------------------------------------------
// Ownership fakes, for Options.Owns

// switchOwner owns everything or nothing, switched atomically.
type switchOwner struct {
	owns  atomic.Bool
	asked atomic.Int64
}

func (o *switchOwner) Owns(types.NamespacedName) bool {
	o.asked.Add(1)
	return o.owns.Load()
}

// recordingOwner owns everything and records which keys it was asked
// about. The dispatcher asks right before each probe, synchronously, so once
// it sleeps again every due key has been asked about.
type recordingOwner struct {
	mu    sync.Mutex
	asked map[types.NamespacedName]bool
}

func (o *recordingOwner) Owns(key types.NamespacedName) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asked[key] = true
	return true
}

func (o *recordingOwner) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.asked)
}

// ---------------------------------------------------------------------------
// Tests

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

// 1. Intervals are honoured, drift-free, without backlog bursts.
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

	// The clock jumps 35s past the due time t0+60s: one probe, no burst of
	// catch-up probes; the schedule re-anchors one interval after now.
	h.step(35 * time.Second) // now t0+85s
	h.waitCalls(7)
	h.settle()
	require.Equal(t, 7, h.prober.numCalls(), "no backlog burst")
	assert.Equal(t, t0.Add(85*time.Second), h.prober.allCalls()[6].At)

	h.step(9 * time.Second)
	h.settle()
	require.Equal(t, 7, h.prober.numCalls())
	h.step(time.Second) // t0+95s
	h.waitCalls(8)
	assert.Equal(t, t0.Add(95*time.Second), h.prober.allCalls()[7].At)
}

// 2. The first probes of many checks added at once are spread by jitter.
func TestInitialJitterSpreadsFirstProbes(t *testing.T) {
	const n = 100

	t.Run("math/rand", func(t *testing.T) {
		own := &recordingOwner{asked: map[types.NamespacedName]bool{}}
		h := newHarness(t, func(_ *harness, o *scheduler.Options) {
			o.InitialJitter = time.Second
			o.Owns = own.Owns
			o.Logger = logr.Discard()
		})
		for i := range n {
			h.s.Upsert(checkN(i, 1, time.Hour, "v1"))
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
		for _, c := range h.prober.allCalls() {
			require.False(t, first[c.URL], "one probe per check: %s", c.URL)
			first[c.URL] = true
			d := c.At.Sub(t0)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, time.Second)
			buckets[int64(d/(100*time.Millisecond))] = true
		}
		assert.GreaterOrEqual(t, len(buckets), 5, "first probes should spread over [0,1s): buckets %v", buckets)
	})

	t.Run("injected rand", func(t *testing.T) {
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
	})

	t.Run("bounded by interval", func(t *testing.T) {
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
	})
}

// 3. A checker is never probed twice at once; its turns are skipped while it
// hangs, and other checkers are not held up.
func TestNoOverlappingProbesOfOneChecker(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	slow, fast := checkN(0, 1, 10*time.Second, "v1"), checkN(1, 1, 10*time.Second, "v1")
	release := h.prober.block(slow.Target.URL, false)
	h.s.Upsert(slow)
	h.s.Upsert(fast)
	h.start()
	h.waitCallsTo(slow.Target.URL, 1)
	h.waitCallsTo(fast.Target.URL, 1)

	for i := 1; i <= 4; i++ {
		h.step(10 * time.Second)
		h.waitCallsTo(fast.Target.URL, i+1)
		h.settle()
		require.Len(t, h.prober.callsTo(slow.Target.URL), 1, "hung checker must not be probed again")
	}
	assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(slow.Target.URL)))
	_, ok := h.s.Latest(slow.Key)
	assert.False(t, ok)

	release()
	h.waitLatest(slow.Key, func(scheduler.Outcome) bool { return true }, "outcome after release")

	// Its turn at t0+40s was skipped; the next one is t0+50s.
	h.step(10 * time.Second)
	h.waitCallsTo(slow.Target.URL, 2)
	assert.Equal(t, t0.Add(50*time.Second), h.prober.callsTo(slow.Target.URL)[1].At)
	assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(slow.Target.URL)))
	assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(fast.Target.URL)))
}

// 4. Remove cancels the probe in flight, discards its result and stops
// further probes.
func TestRemoveStopsProbes(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	gone, kept := checkN(0, 1, 10*time.Second, "v1"), checkN(1, 1, 10*time.Second, "v1")
	release := h.prober.block(gone.Target.URL, false)
	defer release()
	h.s.Upsert(gone)
	h.s.Upsert(kept)
	h.start()
	h.waitCallsTo(gone.Target.URL, 1)
	h.waitCallsTo(kept.Target.URL, 1)

	h.s.Remove(gone.Key)
	require.Eventually(t, func() bool { return h.prober.cancelledCount(gone.Target.URL) == 1 }, waitFor, poll,
		"the probe in flight must be cancelled at once")
	assert.Equal(t, 1, h.s.Len())

	for i := 1; i <= 3; i++ {
		h.step(10 * time.Second)
		h.waitCallsTo(kept.Target.URL, i+1)
	}
	h.settle()
	assert.Len(t, h.prober.callsTo(gone.Target.URL), 1, "no probes after Remove")

	// Removing a check that is not in flight stops it too.
	h.s.Remove(kept.Key)
	assert.Zero(t, h.s.Len())
	for range 3 {
		h.clock.Step(10 * time.Second)
		time.Sleep(settle)
	}
	assert.Len(t, h.prober.callsTo(kept.Target.URL), 4)

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
	t.Run("cancels and reprobes", func(t *testing.T) {
		var rands atomic.Int64
		h := newHarness(t, func(_ *harness, o *scheduler.Options) {
			o.Rand = func(int64) int64 { rands.Add(1); return 0 }
		})
		v1, v2 := checkN(0, 1, 10*time.Second, "v1"), checkN(0, 2, 10*time.Second, "v2")
		h.prober.setResult(v2.Target.URL, probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "503", StatusCode: 503})
		h.s.Upsert(v1)
		h.start()

		// A first v1 outcome is stored, then v1 hangs on its next turn.
		h.waitCalls(1)
		h.waitLatest(v1.Key, func(o scheduler.Outcome) bool { return o.Generation == 1 }, "v1 outcome")
		require.Eventually(t, func() bool { return len(h.notified()) == 1 }, waitFor, poll)
		release := h.prober.block(v1.Target.URL, false)
		defer release()
		h.step(10 * time.Second)
		h.waitCalls(2)

		h.s.Upsert(v2)
		require.Eventually(t, func() bool { return h.prober.cancelledCount(v1.Target.URL) == 1 }, waitFor, poll,
			"the v1 probe in flight must be cancelled")
		if out, ok := h.s.Latest(v1.Key); ok { // the v2 probe may already be done
			assert.Equal(t, int64(2), out.Generation, "the v1 outcome is forgotten")
		}

		// The new first probe is due at once (jitter 0), without a clock step.
		h.waitCallsTo(v2.Target.URL, 1)
		assert.Equal(t, t0.Add(10*time.Second), h.prober.callsTo(v2.Target.URL)[0].At)
		out := h.waitLatest(v2.Key, func(o scheduler.Outcome) bool { return o.Generation == 2 }, "v2 outcome")
		assert.Equal(t, probing.ReasonUnexpectedStatus, out.Result.Reason)
		require.Eventually(t, func() bool { return len(h.notified()) == 2 }, waitFor, poll)

		// Identical Upsert (a fresh but equal Target): no reschedule, no
		// jitter drawn, outcome kept.
		require.Equal(t, int64(2), rands.Load())
		h.s.Upsert(checkN(0, 2, 10*time.Second, "v2"))
		h.settle()
		assert.Equal(t, int64(2), rands.Load())
		assert.Len(t, h.prober.callsTo(v2.Target.URL), 1, "identical Upsert must not reprobe")
		again, ok := h.s.Latest(v2.Key)
		require.True(t, ok)
		assert.Equal(t, out, again)

		h.step(9 * time.Second)
		h.settle()
		assert.Len(t, h.prober.callsTo(v2.Target.URL), 1)
		h.step(time.Second)
		h.waitCallsTo(v2.Target.URL, 2)
		assert.Equal(t, t0.Add(20*time.Second), h.prober.callsTo(v2.Target.URL)[1].At)

		h.stop()
		assert.Len(t, h.prober.callsTo(v1.Target.URL), 2)
		n := h.notified()
		require.Len(t, n, 2, "v1 first outcome, v2 first outcome")
		assert.Equal(t, int64(1), n[0].Outcome.Generation)
		assert.True(t, n[0].Outcome.Result.Success)
		assert.Equal(t, int64(2), n[1].Outcome.Generation)
		assert.Equal(t, probing.ReasonUnexpectedStatus, n[1].Outcome.Result.Reason)
		assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(v1.Target.URL)))
	})

	// A prober that is slow to honour cancellation: the new target is not
	// probed while the old probe still runs, and is probed as soon as it
	// returns.
	t.Run("waits for the cancelled probe", func(t *testing.T) {
		h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
		v1, v2 := checkN(0, 1, 10*time.Second, "v1"), checkN(0, 2, 10*time.Second, "v2")
		release := h.prober.block(v1.Target.URL, true)
		defer release()
		h.s.Upsert(v1)
		h.start()
		h.waitCalls(1)

		h.s.Upsert(v2)
		time.Sleep(settle) // (nothing is queued: the v2 turn waits for the v1 probe)
		assert.Empty(t, h.prober.callsTo(v2.Target.URL), "no overlap with the cancelled probe")

		release()
		h.waitCallsTo(v2.Target.URL, 1)
		assert.Equal(t, t0, h.prober.callsTo(v2.Target.URL)[0].At)
		h.waitLatest(v2.Key, func(o scheduler.Outcome) bool { return o.Generation == 2 }, "v2 outcome")
		assert.Equal(t, 1, h.prober.cancelledCount(v1.Target.URL))
		assert.Equal(t, 1, h.prober.maxConcurrency(checkerOf(v1.Target.URL)))

		h.stop()
		for _, n := range h.notified() {
			assert.Equal(t, int64(2), n.Outcome.Generation, "the v1 result must never be stored")
		}
	})
}

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

	h.prober.setResult(c.Target.URL, probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503})
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

// 7. Checks that this replica does not own stay scheduled but are not probed.
func TestOwnership(t *testing.T) {
	own := &switchOwner{}
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Owns = own.Owns
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)
	h.start()

	for range 3 {
		h.settle()
		h.step(10 * time.Second)
	}
	h.settle()
	assert.Zero(t, h.prober.numCalls(), "not owned: no probes")
	assert.Positive(t, own.asked.Load(), "ownership consulted")
	assert.Equal(t, 1, h.s.Len(), "still scheduled")

	own.owns.Store(true)
	h.step(10 * time.Second)
	h.waitCalls(1)
	assert.Equal(t, t0.Add(40*time.Second), h.prober.allCalls()[0].At)
	h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true }, "outcome once owned")

	own.owns.Store(false)
	h.step(10 * time.Second)
	h.settle()
	assert.Equal(t, 1, h.prober.numCalls(), "not owned again: no probes")
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
		release := h.prober.block(c.Target.URL, false)
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

// 9. Ten thousand checks, four workers, and a slow consumer that calls back
// into the scheduler for every notification: every first outcome arrives,
// nothing deadlocks.
func TestScaleNoDeadlock(t *testing.T) {
	const (
		n        = 10000
		interval = 30 * time.Second
		deadline = 60 * time.Second
	)
	notifyCh := make(chan types.NamespacedName) // unbuffered
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Workers = 4
		o.InitialJitter = time.Second
		o.Logger = logr.Discard()
		o.Notify = func(ctx context.Context, key types.NamespacedName) {
			select {
			case notifyCh <- key:
			case <-ctx.Done():
			}
		}
	})
	check := func(i int) scheduler.Check { return checkN(i, 1, interval, "v1") }

	// Concurrent Upserts before Start.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				h.s.Upsert(check(i))
			}
		})
	}
	wg.Wait()
	require.Equal(t, n, h.s.Len())

	index := make(map[types.NamespacedName]int, n)
	for i := range n {
		index[keyN(i)] = i
	}

	// The consumer behaves like the reconciler: it reads Latest and
	// re-upserts the (unchanged) check for every key, slowly.
	var delivered, problems atomic.Int64
	allDelivered := make(chan struct{})
	consumerDone := make(chan struct{})
	stopConsumer := make(chan struct{})
	go func() {
		defer close(consumerDone)
		seen := make(map[types.NamespacedName]int, n)
		for {
			select {
			case <-stopConsumer:
				return
			case key := <-notifyCh:
				if _, ok := h.s.Latest(key); !ok {
					problems.Add(1)
				}
				h.s.Upsert(check(index[key]))
				_ = h.s.Len()
				seen[key]++
				if seen[key] > 1 {
					problems.Add(1) // an unchanged outcome must not be notified again
				}
				if d := delivered.Add(1); d == n {
					close(allDelivered)
				} else if d%100 == 0 {
					time.Sleep(time.Millisecond)
				} else {
					runtime.Gosched()
				}
			}
		}
	}()
	defer func() {
		close(stopConsumer)
		select {
		case <-consumerDone:
		case <-time.After(waitFor):
			t.Error("consumer stuck (in a scheduler call?)")
		}
	}()

	h.start()
	h.step(time.Second) // every first probe is now due

	select {
	case <-allDelivered:
	case <-time.After(deadline):
		t.Fatalf("stalled: only %d of %d first outcomes delivered within %v (deadlock?)", delivered.Load(), n, deadline)
	}
	require.Zero(t, problems.Load(), "Latest missing or duplicate notification")
	require.Equal(t, n, h.prober.numCalls())

	// A second round with unchanged outcomes: every check is probed again,
	// nobody is notified.
	h.step(interval)
	require.Eventually(t, func() bool {
		return h.prober.numCalls() == 2*n
	}, deadline, 10*time.Millisecond, "second round of probes")
	time.Sleep(settle)
	h.stop()
	assert.Equal(t, int64(n), delivered.Load(), "unchanged outcomes notified")
	assert.Equal(t, 2*n, h.prober.numCalls())
}

// Upsert, Remove, Latest and Len from many goroutines while probes run; meant
// for -race. Afterwards the scheduler knows exactly the surviving checks and
// never probed a checker twice at once.
func TestConcurrentUse(t *testing.T) {
	const keys = 50
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Workers = 8
		o.InitialJitter = 100 * time.Millisecond
		o.Logger = logr.Discard()
	})
	h.start()

	stopClock := make(chan struct{})
	clockDone := make(chan struct{})
	go func() {
		defer close(clockDone)
		for {
			select {
			case <-stopClock:
				return
			default:
				h.clock.Step(50 * time.Millisecond)
				time.Sleep(time.Millisecond)
			}
		}
	}()

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 42))
			for range 500 {
				i := r.IntN(keys)
				switch r.IntN(4) {
				case 0:
					h.s.Remove(keyN(i))
				case 1:
					h.s.Upsert(checkN(i, int64(r.IntN(3)+1), time.Second, fmt.Sprintf("v%d", r.IntN(2))))
				case 2:
					if out, ok := h.s.Latest(keyN(i)); ok {
						assert.Equal(t, keyN(i), out.Key)
					}
				default:
					_ = h.s.Len()
				}
				if r.IntN(10) == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()

	// Settle on a known final set: even keys present, odd keys removed.
	for i := range keys {
		if i%2 == 0 {
			h.s.Upsert(checkN(i, 9, time.Second, "final"))
		} else {
			h.s.Remove(keyN(i))
		}
	}
	assert.Equal(t, keys/2, h.s.Len())
	for i := 0; i < keys; i += 2 {
		h.waitLatest(keyN(i), func(o scheduler.Outcome) bool { return o.Generation == 9 }, "final generation probed")
	}
	close(stopClock)
	<-clockDone
	h.stop()

	for i := range keys {
		assert.LessOrEqual(t, h.prober.maxConcurrency(checkerOf(urlN(i, "final"))), 1, "overlapping probes of checker %d", i)
		_, ok := h.s.Latest(keyN(i))
		assert.Equal(t, i%2 == 0, ok, "checker %d", i)
	}
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

// recordingObserver records what a Scheduler tells its Observer.
type recordingObserver struct {
	mu       sync.Mutex
	lags     []time.Duration
	finished []probing.Result
}

func (o *recordingObserver) ProbeStarted(_ types.NamespacedName, lag time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lags = append(o.lags, lag)
}

func (o *recordingObserver) ProbeFinished(_ types.NamespacedName, res probing.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished = append(o.finished, res)
}

func (o *recordingObserver) get() (lags []time.Duration, finished []probing.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.lags...), append([]probing.Result(nil), o.finished...)
}

// stateOf returns the Snapshot entry of key.
func stateOf(t *testing.T, s *scheduler.Scheduler, key types.NamespacedName) (scheduler.CheckState, bool) {
	t.Helper()
	for _, st := range s.Snapshot() {
		if st.Key == key {
			return st, true
		}
	}
	return scheduler.CheckState{}, false
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
	release := h.prober.block(c.Target.URL, false)
	h.start()
	require.Eventually(t, func() bool { return h.s.InFlight() == 1 }, waitFor, poll)
	release()
	h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true })
	require.Eventually(t, func() bool { return h.s.InFlight() == 0 }, waitFor, poll)

	// A failing probe, then a change of the check: the counts survive it.
	h.prober.setResult(c.Target.URL, probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503})
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

	lags, finished := obs.get()
	require.Len(t, finished, 3)
	assert.True(t, finished[0].Success)
	assert.False(t, finished[1].Success)
	assert.Equal(t, []time.Duration{0, 0, 0}, lags, "the fake clock never moves while a probe is dispatched")

	h.s.Remove(c.Key)
	_, ok = stateOf(t, h.s, c.Key)
	assert.False(t, ok, "Remove forgets the state")
	h.stop()
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
	release := h.prober.block(a.Target.URL, false)
	h.s.Upsert(a)
	h.start()
	h.waitCallsTo(a.Target.URL, 1)
	h.s.Upsert(b) // due now, but the only worker is busy
	h.clock.Step(3 * time.Second)
	release()
	h.waitCallsTo(b.Target.URL, 1)
	require.Eventually(t, func() bool { _, f := obs.get(); return len(f) == 2 }, waitFor, poll)
	lags, _ := obs.get()
	assert.Equal(t, []time.Duration{0, 3 * time.Second}, lags)
	h.stop()
}
