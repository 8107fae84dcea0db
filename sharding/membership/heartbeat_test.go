package membership_test

import (
	"context"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/sharding/membership"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithControlPlane(func(started *framework.ControlPlane) int {
		cp = started
		return m.Run()
	}))
}

const (
	namespace = "default"
	ringName  = "heartbeat-test"
)

// fencingLog records the fencing changes a Heartbeat reports.
type fencingLog struct {
	mu      sync.Mutex
	changes []bool
}

func (l *fencingLog) record(fenced bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, fenced)
}

func (l *fencingLog) get() []bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.changes...)
}

// await waits until the recorded changes are want: the callback runs just
// after the state it reports has become visible through Fenced.
func (l *fencingLog) await(t *testing.T, want ...bool) {
	t.Helper()
	require.Eventually(t, func() bool { return slices.Equal(l.get(), want) }, 5*time.Second, 10*time.Millisecond, "fencing changes %v, want %v", l.get(), want)
}

// startHeartbeat runs a Heartbeat for id against cfg on a fake clock and
// returns a function that stops it and waits for Start to return.
func startHeartbeat(t *testing.T, cfg *rest.Config, id string, clk *clocktesting.FakeClock, log *fencingLog) (*membership.Heartbeat, func()) {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	hb, err := membership.NewHeartbeat(membership.HeartbeatOptions{
		Client:          clientset.CoordinationV1(),
		Namespace:       namespace,
		ID:              id,
		RingName:        ringName,
		Clock:           clk,
		OnFencingChange: log.record,
		Logger:          testr.New(t),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hb.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(15 * time.Second):
				t.Error("heartbeat did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return hb, stop
}

func getLease(t *testing.T, id string) (*coordinationv1.Lease, error) {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	return clientset.CoordinationV1().Leases(namespace).Get(context.Background(), id, metav1.GetOptions{})
}

// renewedAt waits until the Lease of id says it was renewed at want.
func renewedAt(t *testing.T, id string, want time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		l, err := getLease(t, id)
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Equal(want)
	}, 10*time.Second, 20*time.Millisecond, "lease %s never renewed at %s", id, want)
}

func TestHeartbeatRenewsAndReleases(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	log := &fencingLog{}
	hb, stop := startHeartbeat(t, cp.Config, "renewer", clk, log)

	// Created at once, unfenced after the first renewal.
	renewedAt(t, "renewer", t0)
	l, err := getLease(t, "renewer")
	require.NoError(t, err)
	assert.Equal(t, "renewer", *l.Spec.HolderIdentity)
	assert.EqualValues(t, 10, *l.Spec.LeaseDurationSeconds)
	assert.Equal(t, ringName, l.Labels[membership.LabelRing])
	require.Eventually(t, func() bool { return !hb.Fenced() }, 5*time.Second, 10*time.Millisecond)

	// Renewed every renew interval, stamped with the (fake) clock.
	for i := 1; i <= 3; i++ {
		clk.Step(membership.DefaultRenewInterval)
		renewedAt(t, "renewer", t0.Add(time.Duration(i)*membership.DefaultRenewInterval))
	}
	assert.False(t, hb.Fenced())

	// Shutdown releases the Lease at once.
	stop()
	_, err = getLease(t, "renewer")
	assert.True(t, apierrors.IsNotFound(err), "lease still there after shutdown: %v", err)
	assert.True(t, hb.Fenced())
	log.await(t, false, true)
}

func TestHeartbeatFencesWhenRenewalsFail(t *testing.T) {
	apiURL, err := url.Parse(cp.Config.Host)
	require.NoError(t, err)
	proxy, err := framework.NewProxy(apiURL.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() }) // after the heartbeat has released its Lease
	viaProxy := rest.CopyConfig(cp.Config)
	viaProxy.Host = "https://" + proxy.Addr()

	clk := clocktesting.NewFakeClock(t0)
	log := &fencingLog{}
	hb, _ := startHeartbeat(t, viaProxy, "partitioned", clk, log)
	renewedAt(t, "partitioned", t0)
	require.Eventually(t, func() bool { return !hb.Fenced() }, 5*time.Second, 10*time.Millisecond)

	// The API server becomes unreachable. Renewals fail, but the replica
	// keeps working until lease duration - safety margin (8s) has passed
	// since its last renewal...
	proxy.Cut()
	fenceAt := t0.Add(membership.DefaultLeaseDuration - membership.DefaultSafetyMargin)
	for clk.Now().Add(membership.DefaultRenewInterval).Before(fenceAt) {
		clk.Step(membership.DefaultRenewInterval)
	}
	clk.SetTime(fenceAt.Add(-time.Millisecond))
	assert.Never(t, hb.Fenced, 2*time.Second, 20*time.Millisecond, "fenced before %s", fenceAt)

	// ...and fences itself exactly then.
	clk.SetTime(fenceAt)
	require.Eventually(t, hb.Fenced, 10*time.Second, 10*time.Millisecond, "not fenced at %s", fenceAt)
	log.await(t, false, true)

	// Reachable again: the next renewal lifts the fencing.
	proxy.Restore()
	clk.Step(membership.DefaultRenewInterval)
	require.Eventually(t, func() bool { return !hb.Fenced() }, 15*time.Second, 20*time.Millisecond)
	log.await(t, false, true, false)
	l, err := getLease(t, "partitioned")
	require.NoError(t, err)
	assert.True(t, l.Spec.RenewTime.Time.After(t0), "renewTime %s", l.Spec.RenewTime)
}

func TestHeartbeatOptionsAreValidated(t *testing.T) {
	clientset, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	base := membership.HeartbeatOptions{Client: clientset.CoordinationV1(), Namespace: namespace, ID: "x", RingName: ringName}
	tests := map[string]struct {
		mutate func(*membership.HeartbeatOptions)
		want   string
	}{
		"no id":                       {func(o *membership.HeartbeatOptions) { o.ID = "" }, "required"},
		"fractional lease duration":   {func(o *membership.HeartbeatOptions) { o.LeaseDuration = 1500 * time.Millisecond }, "whole number of seconds"},
		"renew slower than the fence": {func(o *membership.HeartbeatOptions) { o.RenewInterval = 9 * time.Second }, "renew interval"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := base
			tc.mutate(&opts)
			_, err := membership.NewHeartbeat(opts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err = membership.NewHeartbeat(base)
	assert.NoError(t, err)
}
