package sharding_test

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/sharding/membership"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme, err := controllers.NewScheme()
	require.NoError(t, err)
	return scheme
}

// startReplica runs one replica in this process against cfg until the test
// ends.
func startReplica(t *testing.T, cfg *rest.Config, opts controllers.ReplicaOptions) *controllers.Replica {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 newScheme(t),
		Cache:                  controllers.CacheOptions(opts.LeaseNamespace, opts.RingName),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several replicas run in this one process, one after the other.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	opts.Logger = ctrl.Log.WithName(opts.ShardID)
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry() // one per replica
	}
	replica, err := controllers.Setup(mgr, opts)
	require.NoError(t, err)
	framework.RunInTest(t, mgr)
	return replica
}

// TestReplicaFencesItselfWhenCutOff runs one replica whose only way to the
// API server is a proxy, cuts the proxy, and checks that the replica stops
// probing within the lease duration, and resumes once it can renew again.
func TestReplicaFencesItselfWhenCutOff(t *testing.T) {
	const (
		leaseDuration = 3 * time.Second
		renewInterval = 500 * time.Millisecond
		safetyMargin  = 750 * time.Millisecond
		interval      = time.Second
	)
	scheme := newScheme(t)
	direct, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)

	apiURL, err := url.Parse(cp.Config.Host)
	require.NoError(t, err)
	proxy, err := framework.NewProxy(apiURL.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	viaProxy := rest.CopyConfig(cp.Config)
	viaProxy.Host = "https://" + proxy.Addr()

	dns := probetest.NewTestDNSServer(t, map[string][]net.IP{})
	target := framework.NewTarget()
	t.Cleanup(target.Close)

	replica := startReplica(t, viaProxy, controllers.ReplicaOptions{
		ShardID:        "cut-off",
		Prober:         probing.NewHTTPProber(probing.HTTPProberOptions{DNSServer: dns.Addr()}),
		InitialJitter:  100 * time.Millisecond,
		LeaseNamespace: "default",
		RingName:       "fencing-test",
		LeaseDuration:  leaseDuration,
		RenewInterval:  renewInterval,
		SafetyMargin:   safetyMargin,
	})
	t.Cleanup(proxy.Restore) // runs before the replica stops: let it release its Lease

	wc := &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fenced"},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host:     target.URL(),
			Path:     "/fenced",
			Interval: &metav1.Duration{Duration: interval},
			Timeout:  &metav1.Duration{Duration: 500 * time.Millisecond},
		},
	}
	require.NoError(t, direct.Create(context.Background(), wc))
	// Replicas of other tests see every namespace: leave nothing to them.
	t.Cleanup(func() { _ = direct.Delete(context.Background(), wc) })
	require.Eventually(t, func() bool {
		got := &webcheckerv1alpha1.WebChecker{}
		if direct.Get(context.Background(), client.ObjectKeyFromObject(wc), got) != nil {
			return false
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, webcheckerv1alpha1.ConditionReady) && got.Status.Shard == "cut-off"
	}, 10*time.Second, 50*time.Millisecond, "never Ready")
	require.False(t, replica.Heartbeat.Fenced())

	// Partition: within the lease duration the replica fences itself and
	// stops probing.
	cut := time.Now()
	proxy.Cut()
	require.Eventually(t, replica.Heartbeat.Fenced, leaseDuration, 20*time.Millisecond, "not fenced within the lease duration")
	fencedAfter := time.Since(cut)
	t.Logf("fenced %s after the cut (lease duration %s, safety margin %s)", fencedAfter.Round(time.Millisecond), leaseDuration, safetyMargin)
	assert.False(t, replica.Assigner.Owns(client.ObjectKeyFromObject(wc)))
	// A probe already running may still finish; none may start after.
	time.Sleep(interval)
	quiet := target.Count("/fenced")
	time.Sleep(2 * interval)
	assert.Equal(t, quiet, target.Count("/fenced"), "a fenced replica kept probing")

	// Reconnected: it renews, owns its checker again and probes it.
	proxy.Restore()
	require.Eventually(t, func() bool { return !replica.Heartbeat.Fenced() }, 10*time.Second, 20*time.Millisecond, "still fenced after the API came back")
	require.Eventually(t, func() bool { return target.Count("/fenced") > quiet }, 10*time.Second, 50*time.Millisecond, "probing did not resume")
	assert.True(t, replica.Assigner.Owns(client.ObjectKeyFromObject(wc)))
}

// TestReplicaDeletesStaleLeases checks that the Lease a crashed replica left
// behind is deleted once it has been expired for StaleAfter (a minute), and
// that other Leases are left alone.
func TestReplicaDeletesStaleLeases(t *testing.T) {
	const ringName = "stale-test"
	direct, err := client.New(cp.Config, client.Options{Scheme: newScheme(t)})
	require.NoError(t, err)
	newLease := func(name, ring string, renewed time.Time) *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{membership.LabelRing: ring}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(name),
				LeaseDurationSeconds: ptr.To[int32](10),
				RenewTime:            ptr.To(metav1.NewMicroTime(renewed)),
			},
		}
		require.NoError(t, direct.Create(context.Background(), l))
		t.Cleanup(func() { _ = client.IgnoreNotFound(direct.Delete(context.Background(), l)) })
		return l
	}
	crashed := newLease("crashed-long-ago", ringName, time.Now().Add(-5*time.Minute))
	recent := newLease("crashed-recently", ringName, time.Now().Add(-20*time.Second))
	otherRing := newLease("other-ring", "another-ring", time.Now().Add(-5*time.Minute))

	startReplica(t, cp.Config, controllers.ReplicaOptions{
		ShardID:        "collector",
		Prober:         probing.NewHTTPProber(probing.HTTPProberOptions{DNSServer: probetest.NewTestDNSServer(t, nil).Addr()}),
		LeaseNamespace: "default",
		RingName:       ringName,
	})
	exists := func(l *coordinationv1.Lease) bool {
		err := direct.Get(context.Background(), client.ObjectKeyFromObject(l), &coordinationv1.Lease{})
		require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
		return err == nil
	}
	require.Eventually(t, func() bool { return !exists(crashed) }, 10*time.Second, 50*time.Millisecond, "stale lease not deleted")
	assert.True(t, exists(recent), "a lease expired for less than a minute was deleted")
	assert.True(t, exists(otherRing), "a lease of another ring was deleted")
	require.Eventually(t, func() bool {
		return exists(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "collector"}})
	}, 10*time.Second, 50*time.Millisecond, "the replica's own lease is missing")
}
