package scheduler_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// nsProber probes targets named http://<namespace>.<name>.example/: it
// counts the probes of each namespace running at once, records when each
// started on the scheduler's clock, and makes the probes of hanging
// namespaces wait until their context is done, as a target that accepts
// and never answers would. It never touches the network.
type nsProber struct {
	now     func() time.Time
	hang    map[string]bool
	latency time.Duration // real time every probe that does not hang takes

	mu      sync.Mutex
	active  map[string]int
	maxSeen map[string]int
	starts  map[string][]time.Time // by namespace
}

func newNSProber(now func() time.Time, hang ...string) *nsProber {
	p := &nsProber{now: now, hang: map[string]bool{}, active: map[string]int{}, maxSeen: map[string]int{}, starts: map[string][]time.Time{}}
	for _, ns := range hang {
		p.hang[ns] = true
	}
	return p
}

func nsCheck(ns string, i int, interval time.Duration) scheduler.Check {
	return scheduler.Check{
		Key:        types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("checker-%d", i)},
		Generation: 1,
		Interval:   interval,
		Target:     mustBuild(probing.TargetSpec{URL: fmt.Sprintf("http://%s.checker-%d.example/", ns, i), Method: "GET", Timeout: time.Hour}),
	}
}

func (p *nsProber) probe(ctx context.Context, target probing.Target) probing.Result {
	ns := strings.SplitN(checkerOf(target.URL()), ".", 2)[0]
	p.mu.Lock()
	p.active[ns]++
	p.maxSeen[ns] = max(p.maxSeen[ns], p.active[ns])
	p.starts[ns] = append(p.starts[ns], p.now())
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.active[ns]--
		p.mu.Unlock()
	}()
	if p.hang[ns] {
		<-ctx.Done()
		return probing.Result{Reason: probing.ReasonTimeout, Message: "no answer"}
	}
	if p.latency > 0 {
		time.Sleep(p.latency)
	}
	return probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}
}

// stats returns the probes of ns running now, the most seen at once, and
// the start times of all its probes so far.
func (p *nsProber) stats(ns string) (active, maxSeen int, starts []time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active[ns], p.maxSeen[ns], append([]time.Time(nil), p.starts[ns]...)
}

// One namespace whose 200 targets never answer holds its share of the
// workers and no more; another namespace's probes start on time, turn
// after turn.
func TestNamespaceCannotTakeEveryWorker(t *testing.T) {
	const workers, nA, nB, turns = 16, 200, 3, 5
	const interval = time.Second
	var prober *nsProber
	h := newHarness(t, func(h *harness, o *scheduler.Options) {
		prober = newNSProber(h.clock.Now, "team-a")
		h.held = func() int { active, _, _ := prober.stats("team-a"); return active }
		o.Prober = probing.ProberFunc(prober.probe)
		o.Workers = workers // NamespaceShare: the default, 0.5
		o.Rand = zeroRand
	})
	limit := workers / 2
	for i := range nA {
		h.s.Upsert(nsCheck("team-a", i, interval)) // all due at t0, before B's
	}
	for i := range nB {
		h.s.Upsert(nsCheck("team-b", i, interval))
	}
	h.start()

	for turn := range turns {
		due := t0.Add(time.Duration(turn) * interval)
		require.Eventually(t, func() bool { _, _, s := prober.stats("team-b"); return len(s) == nB*(turn+1) }, waitFor, poll,
			"turn %d: namespace team-b not probed while team-a hangs", turn)
		_, _, starts := prober.stats("team-b")
		for _, at := range starts[nB*turn:] {
			assert.WithinDuration(t, due, at, time.Second, "turn %d: team-b probe late", turn)
		}
		require.Eventually(t, func() bool { active, _, _ := prober.stats("team-a"); return active == limit }, waitFor, poll,
			"turn %d: team-a does not hold its share of the workers", turn)
		_, maxSeen, _ := prober.stats("team-a")
		assert.LessOrEqual(t, maxSeen, limit, "turn %d: team-a exceeded its share", turn)
		require.Eventually(t, func() bool { return h.s.InFlight() == limit }, waitFor, poll,
			"turn %d: in flight %d, want team-a's %d hanging probes only", turn, h.s.InFlight(), limit)
		h.step(interval)
	}
}

// Due checks set aside while their namespace is at its limit are all
// probed as its slots free, each once per turn, never more than the limit
// at once.
func TestNamespaceLimitHonouredWhileDraining(t *testing.T) {
	const workers, n = 4, 200
	const interval = time.Minute
	var prober *nsProber
	h := newHarness(t, func(h *harness, o *scheduler.Options) {
		prober = newNSProber(h.clock.Now)
		prober.latency = time.Millisecond
		o.Prober = probing.ProberFunc(prober.probe)
		o.Workers = workers
		o.NamespaceShare = 0.5
		o.Rand = zeroRand
	})
	for i := range n {
		h.s.Upsert(nsCheck("team-a", i, interval))
	}
	h.start()

	for turn := 1; turn <= 2; turn++ {
		require.Eventually(t, func() bool { _, _, s := prober.stats("team-a"); return len(s) >= n*turn }, waitFor, poll, "turn %d: not every check probed", turn)
		h.settle()
		_, maxSeen, starts := prober.stats("team-a")
		assert.Len(t, starts, n*turn, "turn %d: a check probed twice, or a turn lost", turn)
		assert.Equal(t, 2, maxSeen, "at most ceil(0.5 × 4) probes of one namespace at once, and that many")
		h.step(interval)
	}
}

// A check removed, or changed, while set aside is not probed for its old
// turn, and does not keep the turns set aside behind it waiting.
func TestSetAsideChecksRemovedOrChanged(t *testing.T) {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Workers = 2 // one slot per namespace
		o.Rand = zeroRand
	})
	a0, a1, a2 := checkN(0, 1, time.Minute, "v1"), checkN(1, 1, time.Minute, "v1"), checkN(2, 1, time.Minute, "v1")
	release := h.prober.block(a0.Target.URL(), false)
	defer release()
	h.s.Upsert(a0)
	h.start()
	h.waitCallsTo(a0.Target.URL(), 1)
	h.s.Upsert(a1)
	h.s.Upsert(a2)
	h.settle()
	assert.Equal(t, 1, h.prober.numCalls(), "a1 and a2 wait for their namespace's slot")

	h.s.Remove(a1.Key)
	a2v2 := checkN(2, 2, time.Minute, "v2")
	h.s.Upsert(a2v2) // a new revision: due at once, set aside again
	release()
	h.waitCallsTo(a2v2.Target.URL(), 1)
	h.settle()
	assert.Empty(t, h.prober.callsTo(a1.Target.URL()), "removed while set aside")
	assert.Empty(t, h.prober.callsTo(a2.Target.URL()), "changed while set aside: the old revision is not probed")
}

func TestNamespaceShareValidated(t *testing.T) {
	noop := probing.ProberFunc(func(context.Context, probing.Target) probing.Result { return probing.Result{} })
	for share, ok := range map[float64]bool{0: true, 0.01: true, 0.5: true, 1: true, -0.5: false, 1.01: false} {
		_, err := scheduler.New(scheduler.Options{Prober: noop, NamespaceShare: share})
		assert.Equal(t, ok, err == nil, "share %v: %v", share, err)
	}
}

// lagObserver records the lag of every probe start, by namespace.
type lagObserver struct {
	mu   sync.Mutex
	lags map[string][]time.Duration
}

func (o *lagObserver) ProbeStarted(key types.NamespacedName, lag time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lags[key.Namespace] = append(o.lags[key.Namespace], lag)
}

func (o *lagObserver) ProbeFinished(scheduler.Outcome) {}

func (o *lagObserver) of(ns string) []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.lags[ns]...)
}

// silentListener accepts TCP connections on 127.0.0.1 and never answers;
// it closes them when the test ends.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// The case with the real HTTP prober and the real clock: 200
// checkers of one namespace whose target accepts connections and never
// answers do not delay the probes of another namespace by more than a
// second.
func TestHangingTargetDoesNotDelayOtherNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a few seconds of real time")
	}
	const workers, nA, nB = 16, 200, 3
	const interval, run = time.Second, 3 * time.Second
	silent := silentListener(t)
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(answering.Close)

	obs := &lagObserver{lags: map[string][]time.Duration{}}
	s, err := scheduler.New(scheduler.Options{
		Prober:        probing.NewHTTPProber(probing.ProberOptions{}),
		Workers:       workers,
		InitialJitter: -1, // every check due at once
		Observer:      obs,
	})
	require.NoError(t, err)
	for i := range nA {
		c := nsCheck("team-a", i, interval)
		c.Target = mustBuild(probing.TargetSpec{URL: "http://" + silent + "/", Method: "GET", Timeout: time.Minute})
		s.Upsert(c)
	}
	for i := range nB {
		c := nsCheck("team-b", i, interval)
		c.Target = mustBuild(probing.TargetSpec{URL: answering.URL, Method: "GET", Timeout: 5 * time.Second, ExpectedStatusCodes: []int{200}})
		s.Upsert(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	time.Sleep(run)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Start did not return")
	}

	lagsB := obs.of("team-b")
	assert.GreaterOrEqual(t, len(lagsB), nB*int(run/interval-1), "team-b probed on (nearly) every turn")
	for _, lag := range lagsB {
		assert.LessOrEqual(t, lag, time.Second, "team-b probe delayed")
	}
	assert.Len(t, obs.of("team-a"), workers/2, "team-a: its share of the workers, held by probes that never end")
}
