package controllers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/probing/scheduler"
)

// The tests of timing run on a replica of their own whose scheduler and
// reconciler read a fake clock that the test steps: a probe happens when
// the test moves the clock to its grid point, and every time in the status
// is the fake time of the probe that decided it.

// t0 is where the fake clocks start: a whole hour, so that the grid
// points of a check created at t0 are t0 + k·interval.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	// waitFor bounds a wait for what a replica does at once: the probe
	// after a step, a status write, a watch event. It is generous: the
	// suite runs on two shared cores.
	waitFor = 30 * time.Second
	// settle is how long a negative assertion ("nothing else happened")
	// polls. It can only make such a test pass wrongly, never fail wrongly.
	settle = 300 * time.Millisecond
)

// clockedReplica is a replica on a fake clock that owns the checkers of
// one namespace of its own (which the suite's replica does not own).
type clockedReplica struct {
	clock     *clocktesting.FakeClock
	sched     *scheduler.Scheduler
	namespace string
	registry  *prometheus.Registry

	mu       sync.Mutex
	finished map[types.NamespacedName]int
}

var _ scheduler.Observer = (*clockedReplica)(nil)

// ProbeStarted implements scheduler.Observer.
func (*clockedReplica) ProbeStarted(types.NamespacedName, time.Duration) {}

// ProbeFinished implements scheduler.Observer: it counts the probes whose
// outcome the scheduler stored.
func (c *clockedReplica) ProbeFinished(o scheduler.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished[o.Key]++
}

// probes is how many probes of key finished with a stored outcome.
func (c *clockedReplica) probes(key types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finished[key]
}

// startClockedReplica runs, until the test ends, a replica whose clock
// starts at t0 and serves a new namespace of its own (its cache holds
// that namespace only), with the suite's prober.
func startClockedReplica(t *testing.T) *clockedReplica {
	t.Helper()
	return startClockedReplicaWith(t, controllers.NamespaceLimits{}, nil)
}

// startClockedReplicaWith is startClockedReplica with the namespace limits
// limits, and with the reconciler's client wrapped by wrap when it is not
// nil.
func startClockedReplicaWith(t *testing.T, limits controllers.NamespaceLimits, wrap func(*clockedReplica, client.Client) client.Client) *clockedReplica {
	t.Helper()
	c := &clockedReplica{
		clock:     clocktesting.NewFakeClock(t0),
		namespace: newElsewhereNamespace(t),
		registry:  prometheus.NewRegistry(), // a second replica in this process
		finished:  map[types.NamespacedName]int{},
	}
	scope := controllers.WatchScope{Namespaces: []string{c.namespace}}
	mgr := sideManager(t, k8sConfig, &scope)
	prober, err := suiteProber()
	require.NoError(t, err)
	const shard = "clocked-replica"
	cfg := replicaConfig{
		shardID:    shard,
		prober:     prober,
		workers:    4,
		scope:      scope,
		ownership:  namespacesOwner{shard: shard, namespaces: map[string]bool{c.namespace: true}},
		logger:     ctrl.Log.WithName("clocked"),
		registerer: c.registry,
		clock:      c.clock,
		observer:   c,
		limits:     limits,
	}
	if wrap != nil {
		cfg.client = func(cl client.Client) client.Client { return wrap(c, cl) }
	}
	c.sched, err = setupReplica(mgr, cfg)
	require.NoError(t, err)
	framework.RunInTest(t, mgr)
	return c
}

// startChecker creates in the replica's namespace a WebChecker probing path
// on a new Target, and waits until its first probe, at t0, made it Ready.
func (c *clockedReplica) startChecker(t *testing.T, name, path string) (*probetest.Target, *webcheckerv1alpha1.WebChecker, types.NamespacedName) {
	t.Helper()
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	wc := newChecker(c.namespace, name, target.URL(), path)
	key := client.ObjectKeyFromObject(wc)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	waitReady(t, key, metav1.ConditionTrue, "", waitFor)
	return target, wc, key
}

// step moves the clock on by one interval, to the next grid point, waits
// until the probe of key due then has finished, and returns its time.
func (c *clockedReplica) step(t *testing.T, key types.NamespacedName) time.Time {
	t.Helper()
	return c.advance(t, key, interval)
}

// advance moves the clock on by d, to a grid point, waits until the probe
// of key due then has finished, and returns its time.
func (c *clockedReplica) advance(t *testing.T, key types.NamespacedName, d time.Duration) time.Time {
	t.Helper()
	n := c.probes(key)
	c.clock.Step(d)
	require.Eventually(t, func() bool { return c.probes(key) > n }, waitFor, poll/5, "no probe of %s at %s", key, c.clock.Now())
	return c.clock.Now()
}

// idle moves the clock on by n intervals, past n grid points at which
// the test expects no probe: a check still scheduled would be probed at
// once (the scheduler does not make up the turns it missed, so one probe
// shows as well as n would).
func (c *clockedReplica) idle(n int) {
	c.clock.Step(time.Duration(n) * interval)
}

// assertReadyStays asserts that the Ready condition of key keeps status
// for a while.
func assertReadyStays(t *testing.T, key types.NamespacedName, status metav1.ConditionStatus, msg string) {
	t.Helper()
	assert.Never(t, func() bool { return ready(getChecker(t, key)).Status != status }, settle, poll, msg)
}

// assertStatusStays asserts that nothing writes the checker key for a
// while: its resourceVersion stays rv.
func assertStatusStays(t *testing.T, key types.NamespacedName, rv, msg string) {
	t.Helper()
	assert.Never(t, func() bool { return getChecker(t, key).ResourceVersion != rv }, settle, poll, msg)
}

// stamped asserts that the condition c moved at the fake time at.
func stamped(t *testing.T, at time.Time, c metav1.Condition, msg string) {
	t.Helper()
	assert.True(t, c.LastTransitionTime.Time.Equal(at), "%s: %s moved at %s, want %s", msg, c.Type, c.LastTransitionTime.UTC(), at)
}
