package scheduler_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// The harness of the scheduler tests: a fake prober that never touches the
// network, a fake clock, and fakes of the scheduler's callbacks.

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
		Target: mustBuild(probing.TargetSpec{
			URL:                 urlN(i, version),
			Method:              "GET",
			Timeout:             5 * time.Second,
			ExpectedStatusCodes: []int{200, 204},
		}),
	}
}

// mustBuild builds spec, a literal of the tests: a spec NewTarget refuses
// is a mistake in the test, which panics.
func mustBuild(spec probing.TargetSpec) probing.Target {
	target, err := probing.NewTarget(spec)
	if err != nil {
		panic(err)
	}
	return target
}

func zeroRand(int64) int64 { return 0 }

// zeroPhase puts every check on the grid { Unix epoch + k·interval }. t0
// is a whole hour, so for the intervals the tests use (divisors of an hour)
// the grid points are t0 + k·interval: with zeroRand, a check added at t0
// is probed at t0, t0+interval, ... as the tests pin.
func zeroPhase(types.NamespacedName, time.Duration) time.Duration { return 0 }

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
	held    atomic.Int64 // probes waiting at a gate

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

	checker := checkerOf(target.URL())
	p.mu.Lock()
	p.calls = append(p.calls, probeCall{URL: target.URL(), At: p.clock.Now()})
	n := len(p.calls)
	p.inFlight[checker]++
	p.maxInFlight[checker] = max(p.maxInFlight[checker], p.inFlight[checker])
	g := p.gates[target.URL()]
	res, ok := p.results[target.URL()]
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
		p.held.Add(1)
		defer p.held.Add(-1)
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
		p.cancelled[target.URL()]++
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
	// held counts the probes kept running on purpose, which waitIdle does
	// not wait for: by default those at the fake prober's gates. A test
	// that brings its own prober and holds probes sets it.
	held func() int

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once

	mu            sync.Mutex
	notifications []notification
}

// newHarness builds a Scheduler on a fake clock and a fake prober. Unless
// configure sets them, Notify records notifications (calling Latest from
// inside Notify, as the real consumer does), Logger is a testr logger and
// Phase is zeroPhase (set it to nil for the default, HashPhase).
func newHarness(t *testing.T, configure func(h *harness, o *scheduler.Options)) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	h := &harness{t: t, clock: clk, prober: newFakeProber(clk)}
	h.held = func() int { return int(h.prober.held.Load()) }
	opts := scheduler.Options{
		Prober: probing.ProberFunc(h.prober.probe),
		Clock:  clk,
		Phase:  zeroPhase,
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

// waitIdle waits until the dispatcher sleeps on its timer and every probe
// not held at a gate has finished and been recorded. Without the second
// half, a clock step could reach a check's next turn while the scheduler
// still counted its previous probe as running, and skip that turn: the
// tests would then depend on how fast the machine runs the probe's
// goroutine.
func (h *harness) waitIdle() {
	h.t.Helper()
	idle := func() bool { return h.clock.HasWaiters() && h.s.InFlight() <= h.held() }
	if !assert.Eventually(h.t, idle, waitFor, poll) {
		require.FailNowf(h.t, "scheduler never idle", "dispatcher sleeping: %t; probes in flight: %d, held on purpose: %d",
			h.clock.HasWaiters(), h.s.InFlight(), h.held())
	}
}

// step waits until the scheduler is idle (waitIdle), then moves the clock.
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

func (o *switchOwner) Owns(types.NamespacedName, int, time.Time) bool {
	o.asked.Add(1)
	return o.owns.Load()
}

// recordingOwner owns everything and records which keys it was asked
// about, with the vantage points and the due time asked for. The
// dispatcher asks right before each probe, synchronously, so once it
// sleeps again every due key has been asked about.
type recordingOwner struct {
	mu    sync.Mutex
	asked map[types.NamespacedName]int
	due   map[types.NamespacedName]time.Time
}

func newRecordingOwner() *recordingOwner {
	return &recordingOwner{asked: map[types.NamespacedName]int{}, due: map[types.NamespacedName]time.Time{}}
}

func (o *recordingOwner) Owns(key types.NamespacedName, vantagePoints int, due time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asked[key] = vantagePoints
	o.due[key] = due
	return true
}

func (o *recordingOwner) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.asked)
}

// ---------------------------------------------------------------------------
// Observer fake

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

func (o *recordingObserver) ProbeFinished(out scheduler.Outcome) {
	res := out.Result
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
