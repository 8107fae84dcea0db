package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/probing/scheduler"
)

// testShardID is the identity of the suite's replica, which owns every
// checker.
const testShardID = "test-replica"

var (
	// k8sClient talks to the API server directly (no cache).
	k8sClient client.Client
	// k8sConfig reaches the API server, for managers of a test's own.
	k8sConfig *rest.Config
	// dns is the loopback resolver the prober uses: it knows only the names
	// the tests register, so no query ever leaves the machine.
	dns *probetest.DNSServer
	// testRegistry holds the metrics of the manager the tests run.
	testRegistry = prometheus.NewRegistry()
	// logs records every log line of the manager, debug included.
	logs = &logRecorder{mu: &sync.Mutex{}, lines: &[]string{}}
)

// deniedAddr is denied by the manager's egress policy: an address of the
// loopback block that tests can listen on. Nothing dials outside
// 127.0.0.0/8.
const deniedAddr = "127.0.0.2"

func TestMain(m *testing.M) {
	logs.delegate = zap.New(zap.UseDevMode(true), zap.Level(zapLevel())).GetSink()
	ctrl.SetLogger(logr.New(logs))
	os.Exit(framework.RunWithControlPlane(func(cp *framework.ControlPlane) int { return runSuite(m, cp) }))
}

func runSuite(m *testing.M, cp *framework.ControlPlane) int {
	var err error
	dns, err = probetest.NewDNSServer(map[string][]net.IP{
		"target.test": {net.IPv4(127, 0, 0, 1)},
		"denied.test": {net.ParseIP(deniedAddr)},
		// Two loopback addresses in turn, as round-robin DNS answers.
		"round-robin.test": {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 3)},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dns.Rotate(true) // only names with several addresses change order
	defer dns.Close()

	scheme, err := framework.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8sConfig = cp.Config
	if k8sClient, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped, err := startManager(ctx, cp, scheme)
	if err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-stopped; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// startManager runs the suite's replica in this process against the
// control plane: the reconciler with the real scheduler and HTTP prober.
func startManager(ctx context.Context, cp *framework.ControlPlane, scheme *runtime.Scheme) (<-chan error, error) {
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	prober, err := suiteProber()
	if err != nil {
		return nil, err
	}
	if _, err := setupReplica(mgr, replicaConfig{
		shardID:       testShardID,
		prober:        prober,
		secretAccess:  true,
		workers:       16,
		initialJitter: 200 * time.Millisecond,
		logger:        ctrl.Log,
		registerer:    testRegistry,
	}); err != nil {
		return nil, err
	}
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	// Tests measure latencies from their first request: start them once
	// the manager is watching.
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("manager cache did not sync")
	}
	return stopped, nil
}

// suiteProber is the HTTP prober of the suite's replicas. Loopback is
// denied by default: the tests' targets listen on 127.0.0.1
// (round-robin.test also answers 127.0.0.3), allowed as --allow-cidrs
// would; deniedAddr stays denied. It resolves through the loopback stub.
func suiteProber() (probing.Prober, error) {
	deny, err := egress.ParseCIDRs([]string{deniedAddr})
	if err != nil {
		return nil, err
	}
	allow, err := egress.ParseCIDRs([]string{"127.0.0.1/32", "127.0.0.3/32", "::1/128"})
	if err != nil {
		return nil, err
	}
	return probing.NewHTTPProber(probing.ProberOptions{DNSServer: dns.Addr(), Egress: egress.NewPolicy(egress.Options{Deny: deny, Allow: allow})}), nil
}

// replicaConfig configures the replica that setupReplica wires for a test.
type replicaConfig struct {
	shardID       string
	prober        probing.Prober
	workers       int
	initialJitter time.Duration
	secretAccess  bool
	scope         controllers.WatchScope
	logger        logr.Logger
	registerer    prometheus.Registerer
	// ownership decides what the replica owns; nil is suiteOwner.
	ownership replicaOwnership
	// clock, when not nil, is the scheduler's and the reconciler's clock,
	// and every check is probed on the grid { Unix epoch + k·interval }
	// with no initial jitter: a new or changed check is probed before the
	// clock moves, then once per interval the test steps it by.
	clock *clocktesting.FakeClock
	// observer, when not nil, is told about every probe too.
	observer scheduler.Observer
	// limits are the reconciler's namespace limits.
	limits controllers.NamespaceLimits
	// client, when not nil, wraps the manager's client into the
	// reconciler's.
	client func(client.Client) client.Client
}

// replicaOwnership is what a test replica's reconciler and metrics need of
// its ring.
type replicaOwnership interface {
	controllers.Ownership
	metrics.ShardSource
}

// setupReplica wires what the tests run of a replica into mgr: the probe
// scheduler, its metrics and the reconciler, alone on their ring (they own
// every checker). The Lease ring is wired, and tested, in cmd/manager. It
// returns the replica's scheduler.
func setupReplica(mgr ctrl.Manager, c replicaConfig) (*scheduler.Scheduler, error) {
	trigger := controllers.NewTrigger(0)
	m := metrics.New()
	if c.ownership == nil {
		c.ownership = suiteOwner(c.shardID)
	}
	observers := scheduler.Observers{m}
	if c.observer != nil {
		observers = append(observers, c.observer)
	}
	opts := scheduler.Options{
		Prober:        c.prober,
		Owns:          everyTurn(c.ownership.Probes),
		Workers:       c.workers,
		InitialJitter: c.initialJitter,
		Notify:        trigger.Notify,
		Observer:      observers,
		Logger:        c.logger.WithName("scheduler"),
	}
	if c.clock != nil {
		opts.Clock = c.clock
		opts.Phase = func(types.NamespacedName, time.Duration) time.Duration { return 0 }
		opts.Rand = func(int64) int64 { return 0 }
	}
	sched, err := scheduler.New(opts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(sched); err != nil {
		return nil, err
	}
	// As a replica has them without --metric-labels-allowlist: the SLO
	// objective only.
	labels, err := metrics.NewCheckerLabels(nil)
	if err != nil {
		return nil, err
	}
	ready := metrics.NewReadyStates()
	if err := m.Register(c.registerer, sched, c.ownership, labels, ready); err != nil {
		return nil, err
	}
	r := &controllers.WebCheckerReconciler{
		Scheduler:         sched,
		Ownership:         c.ownership,
		Trigger:           trigger,
		Metrics:           m,
		MetricLabels:      labels,
		Ready:             ready,
		NamespaceSelector: c.scope.NamespaceSelector,
		NamespaceEgress:   true,
		SecretSelector:    c.scope.SecretSelector,
		Limits:            c.limits,
	}
	if c.clock != nil {
		r.Clock = c.clock
	}
	if c.client != nil {
		r.Client = c.client(mgr.GetClient())
	}
	if c.secretAccess {
		r.Secrets = mgr.GetClient()
	}
	return sched, r.SetupWithManager(mgr)
}

// suiteOwner is the Ownership of a replica alone on its ring: it owns every
// checker but those in namespaces named elsewhere-..., which tests give to
// replicas of their own (see newElsewhereNamespace).
type suiteOwner string

func (o suiteOwner) ShardID() string { return string(o) }
func (o suiteOwner) Paused() bool    { return false }
func (suiteOwner) Owns(key types.NamespacedName) bool {
	_, handed := handedOver.Load(key)
	return !handed && !strings.HasPrefix(key.Namespace, elsewherePrefix)
}

// handedOver holds the checkers the suite's replica owned and no longer
// does (see handOverFromSuite).
var handedOver sync.Map

// handOverFromSuite takes key, a checker the suite's replica owns, from it
// until the test ends, as a ring change would: a test then writes its
// status as another replica, which the suite's replica leaves alone.
func handOverFromSuite(t *testing.T, key types.NamespacedName) {
	t.Helper()
	handedOver.Store(key, struct{}{})
	t.Cleanup(func() { handedOver.Delete(key) })
}
func (o suiteOwner) Probes(key types.NamespacedName, _ int) bool { return o.Owns(key) }

// everyTurn makes probes the scheduler's Owns: a replica that probes a
// checker probes each of its turns, whenever due (the suite's replicas
// hand nothing over at an announced instant).
func everyTurn(probes func(types.NamespacedName, int) bool) func(types.NamespacedName, int, time.Time) bool {
	return func(key types.NamespacedName, k int, _ time.Time) bool { return probes(key, k) }
}
func (o suiteOwner) VantagePoints(types.NamespacedName, int) []controllers.VantagePoint {
	return []controllers.VantagePoint{{Shard: string(o)}}
}
func (suiteOwner) Zone() string           { return "" }
func (o suiteOwner) Members() []string    { return []string{string(o)} }
func (suiteOwner) Rebalances() uint64     { return 0 }
func (suiteOwner) Fenced() bool           { return false }
func (suiteOwner) Fencings() uint64       { return 0 }
func (suiteOwner) RingChanged() time.Time { return time.Time{} }

// elsewherePrefix starts the names of the namespaces whose checkers the
// suite's replica does not own.
const elsewherePrefix = "elsewhere-"

// newElsewhereNamespace creates a namespace of its own for one test, whose
// checkers the suite's replica does not own.
func newElsewhereNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: elsewherePrefix}}
	require.NoError(t, k8sClient.Create(context.Background(), ns))
	return ns.Name
}

// zapLevel is info, or debug when WEBCHECKER_TEST_DEBUG is set.
func zapLevel() zapcore.Level {
	if os.Getenv("WEBCHECKER_TEST_DEBUG") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.InfoLevel
}

// newNamespace creates a namespace of its own for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "wc-test-"}}
	require.NoError(t, k8sClient.Create(context.Background(), ns))
	return ns.Name
}

// logRecorder is a logr sink that records every line, at every level, as
// text and as JSON (as structured loggers print values), and passes the
// lines its delegate is enabled for on to it.
type logRecorder struct {
	delegate logr.LogSink
	name     string
	values   []any

	mu    *sync.Mutex
	lines *[]string
}

var _ logr.LogSink = (*logRecorder)(nil)

func (l *logRecorder) Init(info logr.RuntimeInfo) { l.delegate.Init(info) }

func (l *logRecorder) Enabled(int) bool { return true }

func (l *logRecorder) record(msg string, err error, kv []any) {
	all := slices.Concat(l.values, kv)
	js, _ := json.Marshal(all)
	line := fmt.Sprintf("%s %s: %v %+v %s %v", l.name, msg, err, all, js, all)
	l.mu.Lock()
	*l.lines = append(*l.lines, line)
	l.mu.Unlock()
}

func (l *logRecorder) Info(level int, msg string, kv ...any) {
	l.record(msg, nil, kv)
	if l.delegate.Enabled(level) {
		l.delegate.Info(level, msg, kv...)
	}
}

func (l *logRecorder) Error(err error, msg string, kv ...any) {
	l.record(msg, err, kv)
	l.delegate.Error(err, msg, kv...)
}

func (l *logRecorder) WithValues(kv ...any) logr.LogSink {
	c := *l
	c.values = slices.Concat(l.values, kv)
	c.delegate = l.delegate.WithValues(kv...)
	return &c
}

func (l *logRecorder) WithName(name string) logr.LogSink {
	c := *l
	c.name = strings.TrimPrefix(l.name+"."+name, ".")
	c.delegate = l.delegate.WithName(name)
	return &c
}

// Lines returns the lines recorded so far.
func (l *logRecorder) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(*l.lines)
}

// sideManager makes a manager for a replica that a test runs beside the
// suite's, on cfg, its cache restricted to scope (nil for none): no
// metrics or health server, and a controller name the suite's manager uses
// already.
func sideManager(t *testing.T, cfg *rest.Config, scope *controllers.WatchScope) ctrl.Manager {
	t.Helper()
	var opts cache.Options
	if scope != nil {
		opts = scope.ApplyTo(opts)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 k8sClient.Scheme(),
		Cache:                  opts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The suite's manager runs a controller of the same name.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	return mgr
}
