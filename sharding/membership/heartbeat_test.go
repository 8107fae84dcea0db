package membership_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

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

// awaitFencingChange waits for the signal of a fencing change and checks
// that Fenced then reads want. The test is the channel's only reader, and
// calls it once for each change it causes, so no signal is left over from
// an earlier change.
func awaitFencingChange(t *testing.T, hb *membership.Heartbeat, want bool, within time.Duration) {
	t.Helper()
	select {
	case <-hb.FencingChanges():
		require.Equal(t, want, hb.Fenced(), "fencing signalled, but Fenced() reads the old state")
	case <-time.After(within):
		require.FailNow(t, "no fencing change signalled", "want fenced=%t within %s; Fenced() reads %t", want, within, hb.Fenced())
	}
}

// noFencingChange checks that no fencing change is pending.
func noFencingChange(t *testing.T, hb *membership.Heartbeat) {
	t.Helper()
	select {
	case <-hb.FencingChanges():
		assert.Fail(t, "fencing change signalled", "Fenced() reads %t", hb.Fenced())
	default:
	}
}

func leasesClient(t *testing.T, cfg *rest.Config) coordinationv1client.LeasesGetter {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return clientset.CoordinationV1()
}

// startHeartbeat runs a Heartbeat for id through leases on a fake clock and
// returns a function that stops it and waits for Start to return; options
// change its HeartbeatOptions first.
func startHeartbeat(t *testing.T, leases coordinationv1client.LeasesGetter, id string, clk *clocktesting.FakeClock, options ...func(*membership.HeartbeatOptions)) (*membership.Heartbeat, func()) {
	t.Helper()
	opts := membership.HeartbeatOptions{
		Client:    leases,
		Namespace: namespace,
		ID:        id,
		RingName:  ringName,
		Clock:     clk,
		Logger:    testr.New(t),
	}
	for _, o := range options {
		o(&opts)
	}
	hb, err := membership.NewHeartbeat(opts)
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
	return leasesClient(t, cp.Config).Leases(namespace).Get(context.Background(), id, metav1.GetOptions{})
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
	hb, stop := startHeartbeat(t, leasesClient(t, cp.Config), "renewer", clk)

	// Created at once, unfenced after the first renewal.
	renewedAt(t, "renewer", t0)
	l, err := getLease(t, "renewer")
	require.NoError(t, err)
	assert.Equal(t, "renewer", *l.Spec.HolderIdentity)
	assert.EqualValues(t, 10, *l.Spec.LeaseDurationSeconds)
	assert.Equal(t, ringName, l.Labels[membership.LabelRing])
	awaitFencingChange(t, hb, false, 5*time.Second)

	// Renewed every renew interval, stamped with the (fake) clock.
	for i := 1; i <= 3; i++ {
		clk.Step(membership.DefaultRenewInterval)
		renewedAt(t, "renewer", t0.Add(time.Duration(i)*membership.DefaultRenewInterval))
	}
	assert.False(t, hb.Fenced())
	noFencingChange(t, hb)

	// Shutdown fences the replica and releases the Lease at once.
	stop()
	_, err = getLease(t, "renewer")
	assert.True(t, apierrors.IsNotFound(err), "lease still there after shutdown: %v", err)
	awaitFencingChange(t, hb, true, 5*time.Second)
}

// racingLeases is a LeasesGetter that, once armed, runs a function (another
// writer) right after the next Get returns: between the read and the write
// that follows it.
type racingLeases struct {
	coordinationv1client.LeasesGetter
	afterGet atomic.Pointer[func()]
}

func (r *racingLeases) Leases(namespace string) coordinationv1client.LeaseInterface {
	return racingLeaseInterface{LeaseInterface: r.LeasesGetter.Leases(namespace), r: r}
}

type racingLeaseInterface struct {
	coordinationv1client.LeaseInterface
	r *racingLeases
}

func (l racingLeaseInterface) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	lease, err := l.LeaseInterface.Get(ctx, name, opts)
	if f := l.r.afterGet.Swap(nil); f != nil {
		(*f)()
	}
	return lease, err
}

// TestHeartbeatReleasesOnlyItsOwnLease checks that shutdown deletes the
// Lease only while this replica still holds it as it read it: a Lease
// another writer took over, or changed between the read and the delete,
// survives.
func TestHeartbeatReleasesOnlyItsOwnLease(t *testing.T) {
	takeOver := func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("successor") }
	// A successor with the same shard id (a restarted StatefulSet pod)
	// renews the Lease.
	renew := func(l *coordinationv1.Lease) { l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(t0.Add(time.Minute))) }
	tests := map[string]struct {
		// Another writer's change, made before shutdown starts or right
		// after release has read the Lease.
		beforeShutdown, betweenReadAndDelete func(*coordinationv1.Lease)
		wantHolder                           string // "": released
	}{
		"still ours":                           {},
		"taken over before shutdown":           {beforeShutdown: takeOver, wantHolder: "successor"},
		"taken over after release read it":     {betweenReadAndDelete: takeOver, wantHolder: "successor"},
		"renewed by a namesake after the read": {betweenReadAndDelete: renew, wantHolder: "release-renewed-by-a-namesake-after-the-read"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id := "release-" + strings.ReplaceAll(name, " ", "-")
			leases := &racingLeases{LeasesGetter: leasesClient(t, cp.Config)}
			direct := leases.LeasesGetter.Leases(namespace)
			t.Cleanup(func() { _ = direct.Delete(context.Background(), id, metav1.DeleteOptions{}) })
			clk := clocktesting.NewFakeClock(t0)
			hb, stop := startHeartbeat(t, leases, id, clk)
			renewedAt(t, id, t0)
			awaitFencingChange(t, hb, false, 5*time.Second)

			// The clock stands still: no renewal runs after this, so the
			// next Get is release's.
			if tc.beforeShutdown != nil {
				require.NoError(t, changeLease(direct, id, tc.beforeShutdown))
			}
			var raceErr error // set on the heartbeat's goroutine, read after stop
			if tc.betweenReadAndDelete != nil {
				f := func() { raceErr = changeLease(direct, id, tc.betweenReadAndDelete) }
				leases.afterGet.Store(&f)
			}
			stop()
			require.Nil(t, leases.afterGet.Load(), "release did not read the lease")
			require.NoError(t, raceErr)

			l, err := getLease(t, id)
			if tc.wantHolder == "" {
				assert.True(t, apierrors.IsNotFound(err), "lease still there after shutdown: %v", err)
				return
			}
			require.NoError(t, err, "a lease another writer changed was deleted")
			assert.Equal(t, tc.wantHolder, ptr.Deref(l.Spec.HolderIdentity, ""))
		})
	}
}

// changeLease reads the Lease of id and writes it back changed, as another
// writer would.
func changeLease(leases coordinationv1client.LeaseInterface, id string, change func(*coordinationv1.Lease)) error {
	ctx := context.Background()
	l, err := leases.Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting lease %s: %w", id, err)
	}
	change(l)
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating lease %s: %w", id, err)
	}
	return nil
}

// TestHeartbeatFencesWhenRenewalsFail cuts a joined replica off the API
// server: it fences itself exactly lease duration - safety margin after its
// last renewal (counted once in Fencings), and the next renewal lifts it.
func TestHeartbeatFencesWhenRenewalsFail(t *testing.T) {
	proxy, viaProxy := framework.ProxyToAPIServer(t, cp.Config) // closed after the heartbeat released its Lease (cleanups run last first)

	clk := clocktesting.NewFakeClock(t0)
	hb, _ := startHeartbeat(t, leasesClient(t, viaProxy), "partitioned", clk)
	renewedAt(t, "partitioned", t0)
	awaitFencingChange(t, hb, false, 5*time.Second)
	assert.Zero(t, hb.Fencings(), "the fencing a replica starts in counts")

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
	noFencingChange(t, hb)

	// ...and fences itself exactly then.
	clk.SetTime(fenceAt)
	awaitFencingChange(t, hb, true, 10*time.Second)
	assert.EqualValues(t, 1, hb.Fencings())

	// Reachable again: the next renewal lifts the fencing.
	proxy.Restore()
	clk.Step(membership.DefaultRenewInterval)
	awaitFencingChange(t, hb, false, 15*time.Second)
	assert.EqualValues(t, 1, hb.Fencings(), "lifting the fencing counts")
	l, err := getLease(t, "partitioned")
	require.NoError(t, err)
	assert.True(t, l.Spec.RenewTime.Time.After(t0), "renewTime %s", l.Spec.RenewTime)
}

// stalledTimers is a fake clock whose AfterFunc callbacks never run, while
// its time and its tickers move on: the clock of a process whose timer
// goroutine has not run yet when its other goroutines do, as happens after
// it was frozen (SIGSTOP, a paused VM) or starved of CPU past a deadline.
type stalledTimers struct{ *clocktesting.FakeClock }

func (c stalledTimers) AfterFunc(d time.Duration, _ func()) clock.Timer { return c.NewTimer(d) }

// TestHeartbeatFencesAtTheDeadlineWithoutItsTimer: a replica whose fencing
// timer has not fired reads itself fenced from the deadline on, from the
// deadline, and signals it, so that nothing probes or writes with a Lease
// the others may already see expired.
func TestHeartbeatFencesAtTheDeadlineWithoutItsTimer(t *testing.T) {
	proxy, viaProxy := framework.ProxyToAPIServer(t, cp.Config)

	clk := clocktesting.NewFakeClock(t0)
	hb, _ := startHeartbeat(t, leasesClient(t, viaProxy), "thawed", clk, func(o *membership.HeartbeatOptions) {
		o.Clock = stalledTimers{clk}
	})
	renewedAt(t, "thawed", t0)
	awaitFencingChange(t, hb, false, 5*time.Second)

	proxy.Cut()
	fenceAt := t0.Add(membership.DefaultLeaseDuration - membership.DefaultSafetyMargin)
	clk.SetTime(fenceAt.Add(-time.Millisecond))
	assert.False(t, hb.Fenced(), "fenced before the deadline")
	noFencingChange(t, hb)

	// Thawed well past the deadline, before any renewal could run.
	clk.SetTime(fenceAt.Add(20 * time.Second))
	assert.True(t, hb.Fenced(), "not fenced %s after the deadline", 20*time.Second)
	assert.Equal(t, fenceAt, hb.FencedSince(), "fenced since")
	assert.EqualValues(t, 1, hb.Fencings())
	awaitFencingChange(t, hb, true, time.Second)
	assert.True(t, hb.Fenced())
	assert.EqualValues(t, 1, hb.Fencings(), "one fencing, counted once")

	// A renewal lifts it as usual.
	proxy.Restore()
	clk.Step(membership.DefaultRenewInterval)
	awaitFencingChange(t, hb, false, 15*time.Second)
}

// slowTransport delays every request by delay, as an API server under load
// answers.
type slowTransport struct {
	next  http.RoundTripper
	delay time.Duration
}

func (s slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case <-time.After(s.delay):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return s.next.RoundTrip(req)
}

// TestHeartbeatWaitsForASlowRenewal: an API server that takes longer than a
// renew interval to answer does not fence a replica whose renewals still
// succeed within the fencing deadline.
func TestHeartbeatWaitsForASlowRenewal(t *testing.T) {
	slow := rest.CopyConfig(cp.Config)
	delay := membership.DefaultRenewInterval + 500*time.Millisecond
	slow.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return slowTransport{next: rt, delay: delay} }

	clk := clocktesting.NewFakeClock(t0)
	hb, _ := startHeartbeat(t, leasesClient(t, slow), "slow-api", clk)
	// A renewal is a read and a write: twice the delay, more than a renew
	// interval, less than the fencing deadline.
	awaitFencingChange(t, hb, false, 4*delay+5*time.Second)
	renewedAt(t, "slow-api", t0)
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
		"zone not a label value":      {func(o *membership.HeartbeatOptions) { o.Zone = "eu west/1" }, `zone "eu west/1" is not a valid label value`},
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

// TestHeartbeatJoinsOnceReady: with BeforeJoin, no Lease exists (and the
// replica stays fenced) until it returns; an error is logged, not fatal.
func TestHeartbeatJoinsOnceReady(t *testing.T) {
	for name, result := range map[string]error{"ready": nil, "not ready, joins anyway": errors.New("3 checkers not scheduled")} {
		t.Run(name, func(t *testing.T) {
			id := "joiner-" + map[bool]string{true: "ready", false: "late"}[result == nil]
			ready := make(chan struct{})
			hb, _ := startHeartbeat(t, leasesClient(t, cp.Config), id, clocktesting.NewFakeClock(t0), func(o *membership.HeartbeatOptions) {
				o.BeforeJoin = func(ctx context.Context) error {
					select {
					case <-ready:
						return result
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			})

			assert.Never(t, func() bool { _, err := getLease(t, id); return err == nil }, 500*time.Millisecond, 20*time.Millisecond, "Lease written before the replica was ready")
			assert.True(t, hb.Fenced())
			close(ready)
			renewedAt(t, id, t0)
			awaitFencingChange(t, hb, false, 5*time.Second)
		})
	}
}

// TestHeartbeatStopsWhileWaitingToJoin: shutting down while BeforeJoin
// waits writes no Lease and returns.
func TestHeartbeatStopsWhileWaitingToJoin(t *testing.T) {
	hb, stop := startHeartbeat(t, leasesClient(t, cp.Config), "never-joins", clocktesting.NewFakeClock(t0), func(o *membership.HeartbeatOptions) {
		o.BeforeJoin = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	})
	stop() // fails the test unless Start returns, without error
	_, err := getLease(t, "never-joins")
	assert.True(t, apierrors.IsNotFound(err), "lease written: %v", err)
	assert.True(t, hb.Fenced())
}

// deletedLease watches the Lease of id and returns a function that waits
// for its deletion and returns the Lease as the deletion showed it, which
// is what the other replicas' informers get.
func deletedLease(t *testing.T, id string) func() *coordinationv1.Lease {
	t.Helper()
	w, err := leasesClient(t, cp.Config).Leases(namespace).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + id})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return func() *coordinationv1.Lease {
		t.Helper()
		timeout := time.After(15 * time.Second)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				require.True(t, ok, "watch of lease %s ended", id)
				if ev.Type == watch.Deleted {
					l, isLease := ev.Object.(*coordinationv1.Lease)
					require.True(t, isLease, "deleted object %T", ev.Object)
					return l
				}
			case <-timeout:
				require.FailNow(t, "lease not deleted", id)
				return nil
			}
		}
	}
}

// On shutdown, a replica asks when it stopped probing before it fences
// itself, and marks its Lease with that instant before deleting it: the
// others read it from the deletion. When it does not know, the Lease is
// deleted unmarked.
func TestHeartbeatMarksWhenProbingStopped(t *testing.T) {
	stoppedAt := t0.Add(1500 * time.Millisecond)
	tests := map[string]struct {
		stopped func(ctx context.Context) (time.Time, bool)
		want    time.Time // zero: unmarked
	}{
		"probing stopped: that instant": {stopped: func(context.Context) (time.Time, bool) { return stoppedAt, true }, want: stoppedAt},
		"probing did not stop in time: unmarked": {stopped: func(ctx context.Context) (time.Time, bool) {
			<-ctx.Done()
			return time.Time{}, false
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id := "marks-" + strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), ":", "")
			var hb *membership.Heartbeat
			var askedFenced atomic.Int32 // 1: asked while not fenced, 2: while fenced
			hb, stop := startHeartbeat(t, leasesClient(t, cp.Config), id, clocktesting.NewFakeClock(t0), func(o *membership.HeartbeatOptions) {
				o.ProbingStopped = func(ctx context.Context) (time.Time, bool) {
					askedFenced.Store(map[bool]int32{false: 1, true: 2}[hb.Fenced()])
					return tc.stopped(ctx)
				}
			})
			renewedAt(t, id, t0)
			awaitFencingChange(t, hb, false, 5*time.Second)
			deleted := deletedLease(t, id)

			stop()
			l := deleted()
			assert.Equal(t, int32(1), askedFenced.Load(), "asked when probing stopped before fencing (1), not after (2) or never (0)")
			at, marked := membership.ProbingStoppedAt(l)
			if tc.want.IsZero() {
				assert.False(t, marked, "marked %s", l.Annotations)
				return
			}
			require.True(t, marked, "unmarked: %v", l.Annotations)
			assert.True(t, tc.want.Equal(at), "marked %s, want %s", at, tc.want)
		})
	}
}

// A replica fenced when it shuts down (its API server unreachable for too
// long) has probed nothing since it was fenced: that is the instant on its
// released Lease, without waiting for the prober.
func TestHeartbeatFencedMarksWhenFenced(t *testing.T) {
	proxy, viaProxy := framework.ProxyToAPIServer(t, cp.Config)

	clk := clocktesting.NewFakeClock(t0)
	var asked atomic.Bool
	hb, stop := startHeartbeat(t, leasesClient(t, viaProxy), "fenced-marks", clk, func(o *membership.HeartbeatOptions) {
		o.ProbingStopped = func(context.Context) (time.Time, bool) {
			asked.Store(true)
			return clk.Now(), true
		}
	})
	renewedAt(t, "fenced-marks", t0)
	awaitFencingChange(t, hb, false, 5*time.Second)
	deleted := deletedLease(t, "fenced-marks")

	proxy.Cut()
	fenceAt := t0.Add(membership.DefaultLeaseDuration - membership.DefaultSafetyMargin)
	for clk.Now().Add(membership.DefaultRenewInterval).Before(fenceAt) {
		clk.Step(membership.DefaultRenewInterval)
	}
	clk.SetTime(fenceAt)
	awaitFencingChange(t, hb, true, 10*time.Second)
	assert.EqualValues(t, 1, hb.Fencings())
	clk.SetTime(fenceAt.Add(time.Second))
	proxy.Restore() // the release goes through; no renewal runs before it

	stop()
	l := deleted()
	assert.False(t, asked.Load(), "asked the prober, fenced")
	at, marked := membership.ProbingStoppedAt(l)
	require.True(t, marked, "unmarked: %v", l.Annotations)
	assert.True(t, fenceAt.Equal(at), "marked %s, want %s (fenced)", at, fenceAt)
}

// TestHeartbeatAnnouncesWhenItLeaves checks Leave: refused while the
// replica is fenced (it has not joined), then written on the Lease at once,
// kept by the renewals that follow, and on the Lease released at shutdown.
func TestHeartbeatAnnouncesWhenItLeaves(t *testing.T) {
	const id = "leaver"
	leavesAt := t0.Add(3 * time.Second)
	clk := clocktesting.NewFakeClock(t0)
	joined := make(chan struct{})
	hb, stop := startHeartbeat(t, leasesClient(t, cp.Config), id, clk, func(o *membership.HeartbeatOptions) {
		o.BeforeJoin = func(ctx context.Context) error {
			select {
			case <-joined:
			case <-ctx.Done():
			}
			return nil
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.ErrorContains(t, hb.Leave(ctx, leavesAt), "fenced", "announced before joining")

	close(joined)
	renewedAt(t, id, t0)
	awaitFencingChange(t, hb, false, 5*time.Second)
	l, err := getLease(t, id)
	require.NoError(t, err)
	_, announced := membership.LeavingAt(l)
	require.False(t, announced, "announced before Leave: %v", l.Annotations)

	require.NoError(t, hb.Leave(ctx, leavesAt))
	l, err = getLease(t, id)
	require.NoError(t, err)
	at, announced := membership.LeavingAt(l)
	require.True(t, announced, "Leave returned before the Lease said so: %v", l.Annotations)
	assert.True(t, leavesAt.Equal(at), "announced %s, want %s", at, leavesAt)

	clk.Step(membership.DefaultRenewInterval)
	renewedAt(t, id, t0.Add(membership.DefaultRenewInterval))
	l, err = getLease(t, id)
	require.NoError(t, err)
	at, announced = membership.LeavingAt(l)
	assert.True(t, announced && leavesAt.Equal(at), "a renewal dropped the announcement: %v", l.Annotations)

	deleted := deletedLease(t, id)
	stop()
	at, announced = membership.LeavingAt(deleted())
	assert.True(t, announced && leavesAt.Equal(at), "released without the announcement")
}

// TestHeartbeatClearsAnAnnouncementLeftBehind checks that a replica that
// takes up a Lease of its name still announcing an earlier replica's
// leaving (its release failed) removes the announcement with its first
// write: the others would otherwise drop the new replica from the ring.
func TestHeartbeatClearsAnAnnouncementLeftBehind(t *testing.T) {
	const id = "successor"
	leases := leasesClient(t, cp.Config)
	left := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: namespace, Annotations: map[string]string{
			membership.AnnotationLeavingAt: t0.Add(-time.Minute).Format(time.RFC3339Nano),
		}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id), LeaseDurationSeconds: ptr.To(int32(10))},
	}
	_, err := leases.Leases(namespace).Create(context.Background(), left, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = leases.Leases(namespace).Delete(context.Background(), id, metav1.DeleteOptions{}) })

	startHeartbeat(t, leases, id, clocktesting.NewFakeClock(t0))
	renewedAt(t, id, t0)
	l, err := getLease(t, id)
	require.NoError(t, err)
	_, announced := membership.LeavingAt(l)
	assert.False(t, announced, "the earlier replica's announcement survived: %v", l.Annotations)
}
