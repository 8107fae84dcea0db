package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/scheduler"
)

// namespacesOwner owns every checker of its namespaces, and nothing else.
type namespacesOwner struct {
	shard      string
	namespaces map[string]bool
}

func (o namespacesOwner) ShardID() string                             { return o.shard }
func (o namespacesOwner) Paused() bool                                { return false }
func (o namespacesOwner) Owns(key types.NamespacedName) bool          { return o.namespaces[key.Namespace] }
func (o namespacesOwner) Probes(key types.NamespacedName, _ int) bool { return o.Owns(key) }
func (o namespacesOwner) Zone() string                                { return "" }
func (o namespacesOwner) Members() []string                           { return []string{o.shard} }
func (namespacesOwner) Rebalances() uint64                            { return 0 }
func (namespacesOwner) Fenced() bool                                  { return false }
func (namespacesOwner) Fencings() uint64                              { return 0 }
func (namespacesOwner) RingChanged() time.Time                        { return time.Time{} }
func (o namespacesOwner) VantagePoints(types.NamespacedName, int) []controllers.VantagePoint {
	return []controllers.VantagePoint{{Shard: o.shard}}
}

// fairReplica configures the replica startFairReplica runs.
type fairReplica struct {
	namespaces []string
	limits     controllers.NamespaceLimits
	// qps and burst pace the replica's client (client-go's defaults when
	// zero).
	qps   float32
	burst int
	// workers is the reconciler's Workers.
	workers int
	// name is the reconciler's Name: its metrics apart from the other
	// replicas' in the test process.
	name string
}

// startFairReplica runs, until the test ends, a replica of its own that
// owns the checkers of c.namespaces (which the suite's replica must not
// own: see newElsewhereNamespace), with c's namespace limits. Its prober
// may reach loopback only.
func startFairReplica(t *testing.T, c fairReplica) {
	t.Helper()
	cfg := rest.CopyConfig(k8sConfig)
	cfg.QPS, cfg.Burst = c.qps, c.burst
	mgr := sideManager(t, cfg, nil)
	owner := namespacesOwner{shard: "fair-replica", namespaces: map[string]bool{}}
	for _, ns := range c.namespaces {
		owner.namespaces[ns] = true
	}
	loopback, err := egress.ParseCIDRs([]string{"127.0.0.0/8", "::1/128"})
	require.NoError(t, err)
	prober := probing.NewHTTPProber(probing.ProberOptions{DNSServer: dns.Addr(), Egress: egress.NewPolicy(egress.Options{Allow: loopback})})
	trigger := controllers.NewTrigger(0)
	m := metrics.New()
	sched, err := scheduler.New(scheduler.Options{
		Prober:        prober,
		Owns:          everyTurn(owner.Probes),
		Workers:       32,
		InitialJitter: 500 * time.Millisecond,
		Notify:        trigger.Notify,
		Observer:      m,
		Logger:        ctrl.Log.WithName("fair-scheduler"),
	})
	require.NoError(t, err)
	require.NoError(t, mgr.Add(sched))
	labels, err := metrics.NewCheckerLabels(nil)
	require.NoError(t, err)
	require.NoError(t, m.Register(prometheus.NewRegistry(), sched, owner, labels, metrics.NewReadyStates()))
	r := &controllers.WebCheckerReconciler{
		Name:      c.name,
		Scheduler: sched,
		Ownership: owner,
		Trigger:   trigger,
		Metrics:   m,
		Limits:    c.limits,
		Workers:   c.workers,
	}
	require.NoError(t, r.SetupWithManager(mgr))
	framework.RunInTest(t, mgr)
}

// answers serves, on every path, the status codes of codes in turn (a
// counter per path).
func answers(t *testing.T, codes func(n int64) int) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := counts[r.URL.Path]
		counts[r.URL.Path]++
		mu.Unlock()
		w.WriteHeader(codes(n))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// statusWrites counts, from the API server's watch, the changes of the
// checkers of namespace (each one status write: nothing else changes
// them), and calls seen with each changed object.
type statusWrites struct {
	n atomic.Int64
}

func watchStatusWrites(t *testing.T, ctx context.Context, namespace string, seen func(*webcheckerv1alpha1.WebChecker)) *statusWrites {
	t.Helper()
	wcl, err := client.NewWithWatch(k8sConfig, client.Options{Scheme: k8sClient.Scheme()})
	require.NoError(t, err)
	w, err := wcl.Watch(ctx, &webcheckerv1alpha1.WebCheckerList{}, client.InNamespace(namespace))
	require.NoError(t, err)
	s := &statusWrites{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			s.n.Add(1)
			if seen != nil {
				seen(ev.Object.(*webcheckerv1alpha1.WebChecker))
			}
		}
	}()
	return s
}

// TestQuietNamespaceIsWrittenBesideANoisyOne: 60 checkers in one namespace
// whose targets turn Ready over on every probe (1s) ask for 60 status
// writes a second, six times the replica's API budget (10/s). A namespace's
// share is 2/s (burst 2): held to it, or borrowing only what the others
// leave of the budget (as the manager runs), the noisy namespace never
// delays a change of the 4 checkers of a quiet namespace by more than an
// interval and 2s. Without the share it takes the whole budget and the
// quiet namespace waits behind it.
func TestQuietNamespaceIsWrittenBesideANoisyOne(t *testing.T) {
	const (
		noisyCheckers = 60
		quietCheckers = 4
		window        = 20 * time.Second
		writeRate     = 2.0
		writeBurst    = 2
		budget        = 10
		quietBound    = interval + 2*time.Second
		// workers bounds the writes in flight when the window opens.
		workers = 8
	)
	tests := map[string]struct {
		borrow bool
		// noisyRate is the bound of the noisy namespace's writes per
		// second.
		noisyRate float64
	}{
		"held to its share":               {noisyRate: writeRate},
		"borrowing what the others leave": {borrow: true, noisyRate: budget},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			limits := controllers.NamespaceLimits{
				ReconcileShare:   0.25,
				StatusWriteRate:  writeRate,
				StatusWriteBurst: writeBurst,
				EventInterval:    controllers.DefaultEventInterval,
				EventBurst:       controllers.DefaultEventBurst,
			}
			if tc.borrow {
				limits.APIRate, limits.APIBurst = budget, budget
			}
			noisyNS, quietNS := newElsewhereNamespace(t), newElsewhereNamespace(t)
			startFairReplica(t, fairReplica{namespaces: []string{noisyNS, quietNS}, limits: limits, qps: budget, burst: budget, workers: workers})
			flipping := answers(t, func(n int64) int { return []int{http.StatusOK, http.StatusInternalServerError}[n%2] })
			var quietCode atomic.Int64
			quietCode.Store(http.StatusOK)
			quiet := answers(t, func(int64) int { return int(quietCode.Load()) })

			ctx := context.Background()
			for i := range quietCheckers {
				require.NoError(t, k8sClient.Create(ctx, newChecker(quietNS, fmt.Sprintf("quiet-%d", i), quiet.URL, "/")))
			}
			for i := range quietCheckers {
				waitReady(t, types.NamespacedName{Namespace: quietNS, Name: fmt.Sprintf("quiet-%d", i)}, metav1.ConditionTrue, "", 10*time.Second)
			}
			for i := range noisyCheckers {
				require.NoError(t, k8sClient.Create(ctx, newChecker(noisyNS, fmt.Sprintf("noisy-%d", i), flipping.URL, fmt.Sprintf("/%d", i))))
			}

			wctx, cancel := context.WithTimeout(ctx, window)
			defer cancel()
			var mu sync.Mutex
			var flippedAt time.Time
			failedAt := map[string]time.Time{}
			noisy := watchStatusWrites(t, wctx, noisyNS, nil)
			quietWrites := watchStatusWrites(t, wctx, quietNS, func(wc *webcheckerv1alpha1.WebChecker) {
				if c := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse {
					mu.Lock()
					if _, ok := failedAt[wc.Name]; !ok {
						failedAt[wc.Name] = time.Now()
					}
					mu.Unlock()
				}
			})
			start := time.Now()
			time.AfterFunc(window/2, func() {
				mu.Lock()
				flippedAt = time.Now()
				mu.Unlock()
				quietCode.Store(http.StatusServiceUnavailable)
			})
			<-wctx.Done()
			elapsed := time.Since(start)

			mu.Lock()
			defer mu.Unlock()
			var slowest time.Duration
			for i := range quietCheckers {
				at, ok := failedAt[fmt.Sprintf("quiet-%d", i)]
				require.True(t, ok, "quiet-%d: its failure was not written within %s", i, window/2)
				slowest = max(slowest, at.Sub(flippedAt))
			}
			perMinute := func(n int64) float64 { return float64(n) * float64(time.Minute) / float64(elapsed) }
			t.Logf("MEASURED over %s: noisy namespace (%d checkers) %d status writes (%.0f/min), quiet namespace (%d checkers) %d (%.0f/min); the quiet failure written %s after the change at the slowest",
				elapsed.Round(time.Second), noisyCheckers, noisy.n.Load(), perMinute(noisy.n.Load()), quietCheckers, quietWrites.n.Load(), perMinute(quietWrites.n.Load()), slowest.Round(time.Millisecond))
			assert.LessOrEqual(t, slowest, quietBound, "a change of the quiet namespace waited behind the noisy one")
			// The bound, the burst, and one write in flight per reconcile
			// worker when the window opened.
			assert.LessOrEqual(t, float64(noisy.n.Load()), tc.noisyRate*elapsed.Seconds()+writeBurst+workers,
				"the noisy namespace took more than its share of status writes")
			assert.Equal(t, int64(quietCheckers), quietWrites.n.Load(), "the quiet namespace's writes: one per checker that changed")
		})
	}
}

// TestMessageOnlyChangesAreWrittenOncePerPeriod: a target whose answer
// changes on every probe (500, 501, 502, ...: the same reason, another
// message and status code) costs one status write per MessagePeriod, not
// one per probe, on a replica on a fake clock stepped a probe at a time; a
// change of reason is still written at once.
func TestMessageOnlyChangesAreWrittenOncePerPeriod(t *testing.T) {
	const period = time.Minute
	c := startClockedReplicaWith(t, controllers.NamespaceLimits{MessagePeriod: period}, nil)
	var ok atomic.Bool
	srv := answers(t, func(n int64) int {
		if ok.Load() {
			return http.StatusOK
		}
		return http.StatusInternalServerError + int(n%3)
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var messages []string
	writes := watchStatusWrites(t, ctx, c.namespace, func(wc *webcheckerv1alpha1.WebChecker) {
		mu.Lock()
		defer mu.Unlock()
		messages = append(messages, meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady).Message)
	})
	wc := newChecker(c.namespace, "changing", srv.URL, "/")
	require.NoError(t, k8sClient.Create(ctx, wc))
	key := client.ObjectKeyFromObject(wc)
	waitReady(t, key, metav1.ConditionFalse, string(probing.ReasonUnexpectedStatus), waitFor)
	require.Eventually(t, func() bool { return writes.n.Load() == 1 }, waitFor, poll, "the first failure was not seen written")

	// Four probes within the period, each with another message than the
	// one before: nothing more is written.
	for range 4 {
		c.step(t, key)
	}
	assert.Never(t, func() bool { return writes.n.Load() > 1 }, settle, poll, "a message-only change was written within the period")
	// The probe once the period has passed (502, the stored one is 500's)
	// is written, once.
	c.advance(t, key, period-4*interval)
	require.Eventually(t, func() bool { return writes.n.Load() == 2 }, waitFor, poll, "the newest message was not written after the period")
	for range 3 {
		c.step(t, key)
	}
	assert.Never(t, func() bool { return writes.n.Load() > 2 }, settle, poll, "a message-only change was written twice in one period")
	// A change of status is written at once, within the period.
	ok.Store(true)
	c.step(t, key)
	waitReady(t, key, metav1.ConditionTrue, "", waitFor)
	mu.Lock()
	t.Logf("status writes: %d (messages %q)", writes.n.Load(), messages)
	mu.Unlock()
}

// TestMessagePeriodCountsFromTheWriteDecision: a checker's MessagePeriod
// counts from the instant its status write was decided, not from when the
// patch returned. The replica's first status patch returns only after its
// clock moved on by an interval; the message-only change probed when the
// period has passed since the decision is written at once. Counted from
// the patch's return, the write would wait for an instant this test's
// clock never reaches (CI once saw that when a step of the clock fell
// between a patch and its bookkeeping).
func TestMessagePeriodCountsFromTheWriteDecision(t *testing.T) {
	const period = time.Minute
	var slow sync.Once
	c := startClockedReplicaWith(t, controllers.NamespaceLimits{MessagePeriod: period}, func(c *clockedReplica, cl client.Client) client.Client {
		return &afterStatusPatch{Client: cl, then: func() { slow.Do(func() { c.clock.Step(interval) }) }}
	})
	var code atomic.Int64
	code.Store(http.StatusInternalServerError)
	srv := answers(t, func(int64) int { return int(code.Load()) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	writes := watchStatusWrites(t, ctx, c.namespace, nil)
	wc := newChecker(c.namespace, "slow-patch", srv.URL, "/")
	require.NoError(t, k8sClient.Create(ctx, wc))
	key := client.ObjectKeyFromObject(wc)
	waitReady(t, key, metav1.ConditionFalse, string(probing.ReasonUnexpectedStatus), waitFor)
	require.Eventually(t, func() bool { return writes.n.Load() == 1 }, waitFor, poll, "the first failure was not seen written")
	// The patch returned at t0+interval, where a probe is due too.
	require.Eventually(t, func() bool { return c.probes(key) >= 2 }, waitFor, poll/5, "no probe once the first patch returned")

	code.Store(http.StatusBadGateway)
	c.advance(t, key, period-interval)
	require.Eventually(t, func() bool { return writes.n.Load() == 2 }, waitFor, poll,
		"the message probed a period after the first write was decided was not written")
	assert.Equal(t, "unexpected status code 502 (expected 2xx or 3xx)", ready(getChecker(t, key)).Message)
}

// afterStatusPatch is a client whose status patches call then once the
// API server has answered them.
type afterStatusPatch struct {
	client.Client
	then func()
}

// Status implements client.Client.
func (c *afterStatusPatch) Status() client.SubResourceWriter {
	return &afterPatchWriter{SubResourceWriter: c.Client.Status(), then: c.then}
}

// afterPatchWriter is the status writer of afterStatusPatch.
type afterPatchWriter struct {
	client.SubResourceWriter
	then func()
}

// Patch implements client.SubResourceWriter.
func (w *afterPatchWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	w.then()
	return err
}

// TestReconcilesWaitInLineForTheirNamespace: a replica whose status writes
// crawl (its client paced at 1 request/s) holds its reconcile workers
// (4, a namespace's share 1 of them) in those writes; the other
// reconciles of the namespace wait in line for a worker instead of being
// tried again and again, and every checker is written all the same.
func TestReconcilesWaitInLineForTheirNamespace(t *testing.T) {
	const (
		checkers = 12
		// perChecker bounds the reconciles of one checker on the
		// replica: its creation, the outcome of its first probe, a turn
		// in line and the wake-up that ends it (2.7 per checker measured
		// on 2 CPUs), with room for more. Tried again every half second
		// while they waited, they took 8.0.
		perChecker = 5
		name       = "in-line"
	)
	ns := newElsewhereNamespace(t)
	startFairReplica(t, fairReplica{namespaces: []string{ns}, limits: controllers.NamespaceLimits{ReconcileShare: 0.25}, qps: 1, burst: 1, workers: 4, name: name})
	target := answers(t, func(int64) int { return http.StatusOK })
	// The replica reconciles every checker there is when it starts, those
	// of the tests before this one too: they are not counted.
	var there webcheckerv1alpha1.WebCheckerList
	require.NoError(t, k8sClient.List(context.Background(), &there))
	before := -1.0
	require.Eventually(t, func() bool {
		n := reconcilesSoFar(t, name)
		settled := n >= float64(len(there.Items)) && n == before
		before = n
		return settled
	}, 30*time.Second, time.Second, "the replica never stopped reconciling the %d checkers already there", len(there.Items))
	for i := range checkers {
		require.NoError(t, k8sClient.Create(context.Background(), newChecker(ns, fmt.Sprintf("c-%d", i), target.URL, "/")))
	}
	for i := range checkers {
		waitReady(t, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("c-%d", i)}, metav1.ConditionTrue, "", time.Minute)
	}
	n := reconcilesSoFar(t, name) - before
	t.Logf("MEASURED %.0f reconciles for %d checkers (%.1f each)", n, checkers, n/checkers)
	assert.LessOrEqual(t, n, float64(checkers*perChecker), "reconciles waiting for a worker were tried again and again")
}

// reconcilesSoFar returns controller-runtime's count of the reconciles of
// the controller named controller.
func reconcilesSoFar(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
