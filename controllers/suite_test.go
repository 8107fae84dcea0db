package controllers_test

import (
	"context"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// The manager under test: a single replica, a ring of one.
const (
	testShardID        = "test-replica"
	testLeaseNamespace = "default"
	testRing           = "controllers-test"
)

var (
	// k8sClient talks to the API server directly (no cache).
	k8sClient client.Client
	// dns is the loopback resolver the prober uses: it knows only the names
	// the tests register, so no query ever leaves the machine.
	dns *probetest.DNSServer
	// testRegistry holds the metrics of the manager the tests run.
	testRegistry = prometheus.NewRegistry()
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	os.Exit(framework.RunWithControlPlane(func(cp *framework.ControlPlane) int { return runSuite(m, cp) }))
}

func runSuite(m *testing.M, cp *framework.ControlPlane) int {
	var err error
	dns, err = probetest.NewDNSServer(map[string][]net.IP{"target.test": {net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer dns.Close()

	scheme, err := controllers.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
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

// startManager runs the real manager wiring (scheduler, HTTP prober,
// reconciler) in this process against the control plane.
func startManager(ctx context.Context, cp *framework.ControlPlane, scheme *runtime.Scheme) (<-chan error, error) {
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controllers.CacheOptions(testLeaseNamespace, testRing),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if _, err := controllers.Setup(mgr, controllers.ReplicaOptions{
		ShardID:        testShardID,
		Prober:         probing.NewHTTPProber(probing.HTTPProberOptions{DNSServer: dns.Addr()}),
		ProbeWorkers:   16,
		InitialJitter:  200 * time.Millisecond,
		LeaseNamespace: testLeaseNamespace,
		RingName:       testRing,
		Logger:         ctrl.Log,
		Registerer:     testRegistry,
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
