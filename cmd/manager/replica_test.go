package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/sharding/membership"
)

// The replica tests share one control plane, started by the first test that
// needs it; the options tests need none.
var (
	cpOnce sync.Once
	cp     *framework.ControlPlane
	cpErr  error
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	code := m.Run()
	if cp != nil {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// controlPlane returns the shared control plane, starting it on first use.
// Under -short (make unit) the test is skipped instead.
func controlPlane(t *testing.T) *framework.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a control plane; not run with -short")
	}
	cpOnce.Do(func() { cp, cpErr = framework.StartControlPlane() })
	require.NoError(t, cpErr, "starting the control plane")
	return cp
}

// startReplica runs one replica, wired as the manager binary wires it, in
// this process against cfg until the test ends.
func startReplica(t *testing.T, cfg *rest.Config, opts replicaOptions) *replica {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 newScheme(),
		Cache:                  cacheOptions(opts.leaseNamespace, opts.ringName),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several replicas run in this one process, one after the other.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	opts.logger = ctrl.Log.WithName(opts.shardID)
	if opts.registerer == nil {
		opts.registerer = prometheus.NewRegistry() // one per replica
	}
	r, err := setupReplica(mgr, opts)
	require.NoError(t, err)
	framework.RunInTest(t, mgr)
	return r
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
	cp := controlPlane(t)
	direct, err := client.New(cp.Config, client.Options{Scheme: newScheme()})
	require.NoError(t, err)

	proxy, viaProxy := framework.ProxyToAPIServer(t, cp.Config)

	dns := probetest.NewTestDNSServer(t, map[string][]net.IP{})
	target := probetest.NewTarget()
	t.Cleanup(target.Close)

	r := startReplica(t, viaProxy, replicaOptions{
		shardID:        "cut-off",
		prober:         probing.NewHTTPProber(probing.ProberOptions{DNSServer: dns.Addr()}),
		initialJitter:  100 * time.Millisecond,
		leaseNamespace: "default",
		ringName:       "fencing-test",
		leaseDuration:  leaseDuration,
		renewInterval:  renewInterval,
		safetyMargin:   safetyMargin,
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
	require.False(t, r.heartbeat.Fenced())

	// Partition: within the lease duration the replica fences itself and
	// stops probing.
	cut := time.Now()
	proxy.Cut()
	require.Eventually(t, r.heartbeat.Fenced, leaseDuration, 20*time.Millisecond, "not fenced within the lease duration")
	fencedAfter := time.Since(cut)
	t.Logf("fenced %s after the cut (lease duration %s, safety margin %s)", fencedAfter.Round(time.Millisecond), leaseDuration, safetyMargin)
	assert.False(t, r.assigner.Owns(client.ObjectKeyFromObject(wc)))
	// A probe already running may still finish; none may start after.
	time.Sleep(interval)
	quiet := target.Count("/fenced")
	time.Sleep(2 * interval)
	assert.Equal(t, quiet, target.Count("/fenced"), "a fenced replica kept probing")

	// Reconnected: it renews, owns its checker again and probes it.
	proxy.Restore()
	require.Eventually(t, func() bool { return !r.heartbeat.Fenced() }, 10*time.Second, 20*time.Millisecond, "still fenced after the API came back")
	require.Eventually(t, func() bool { return target.Count("/fenced") > quiet }, 10*time.Second, 50*time.Millisecond, "probing did not resume")
	assert.True(t, r.assigner.Owns(client.ObjectKeyFromObject(wc)))
}

// TestReplicaDeletesStaleLeases checks that a replica deletes a Lease that
// has been expired for a minute on its own clock, counted from when it first
// saw the Lease (however old its renewTime), and keeps a Lease renewed
// since, a Lease of another ring and its own. The replica runs on a fake
// clock, stepped past the minute.
func TestReplicaDeletesStaleLeases(t *testing.T) {
	const ringName = "stale-test"
	cp := controlPlane(t)
	direct, err := client.New(cp.Config, client.Options{Scheme: newScheme()})
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
	start := time.Now()
	crashed := newLease("crashed-long-ago", ringName, start.Add(-5*time.Minute))
	renewed := newLease("renewed-later", ringName, start.Add(-5*time.Minute))
	otherRing := newLease("other-ring", "another-ring", start.Add(-5*time.Minute))

	clk := clocktesting.NewFakeClock(start)
	r := startReplica(t, cp.Config, replicaOptions{
		shardID:        "collector",
		prober:         probing.NewHTTPProber(probing.ProberOptions{DNSServer: probetest.NewTestDNSServer(t, nil).Addr()}),
		leaseNamespace: "default",
		ringName:       ringName,
		clock:          clk,
		// No first-probe jitter, so nothing waits on the fake clock
		// before the replica joins.
		initialJitter: -1,
	})
	exists := func(l *coordinationv1.Lease) bool {
		err := direct.Get(context.Background(), client.ObjectKeyFromObject(l), &coordinationv1.Lease{})
		require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
		return err == nil
	}
	own := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "collector"}}
	require.Eventually(t, func() bool { return exists(own) }, 10*time.Second, 50*time.Millisecond, "the replica's own lease is missing")
	// Seen, on the fake clock not yet stepped.
	require.Eventually(t, func() bool { return len(r.assigner.Members()) == 3 }, 10*time.Second, 50*time.Millisecond, "members %v", r.assigner.Members())
	assert.Never(t, func() bool { return !exists(crashed) }, time.Second, 50*time.Millisecond, "a lease deleted on first sight for its old renewTime")

	clk.Step(30 * time.Second)
	renewed.Spec.RenewTime = ptr.To(metav1.NewMicroTime(start.Add(-4 * time.Minute)))
	require.NoError(t, direct.Update(context.Background(), renewed))
	clk.Step(41 * time.Second) // expired 10s after it was first seen, and a minute more
	require.Eventually(t, func() bool { return !exists(crashed) }, 10*time.Second, 50*time.Millisecond, "stale lease not deleted")
	assert.True(t, exists(renewed), "a lease renewed 41s ago was deleted")
	assert.True(t, exists(otherRing), "a lease of another ring was deleted")
	assert.True(t, exists(own), "the replica's own lease was deleted")
}
