package controllers_test

import (
	"context"
	"slices"
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
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/probing/scheduler"
)

// switchOwner is an Ownership that a test turns on and off. With a
// namespace it never owns a checker outside it, so that a replica the test
// runs beside the suite's cannot take the other tests' checkers.
type switchOwner struct {
	shard     string
	namespace string
	owns      atomic.Bool
	paused    atomic.Bool
}

func (o *switchOwner) ShardID() string { return o.shard }
func (o *switchOwner) Owns(key types.NamespacedName) bool {
	return o.owns.Load() && (o.namespace == "" || key.Namespace == o.namespace)
}
func (o *switchOwner) Probes(key types.NamespacedName, _ int) bool { return o.Owns(key) }
func (o *switchOwner) Paused() bool                                { return o.paused.Load() }
func (o *switchOwner) VantagePoints(types.NamespacedName, int) []controllers.VantagePoint {
	return []controllers.VantagePoint{{Shard: o.shard}}
}
func (o *switchOwner) Zone() string           { return "" }
func (o *switchOwner) Members() []string      { return []string{o.shard} }
func (o *switchOwner) Rebalances() uint64     { return 0 }
func (o *switchOwner) Fenced() bool           { return false }
func (o *switchOwner) Fencings() uint64       { return 0 }
func (o *switchOwner) RingChanged() time.Time { return time.Time{} }

// heldOutcomes is a Scheduler whose latest outcomes the test sets; like the
// real one, it keeps an outcome while the check is upserted unchanged, and
// counts its streak.
type heldOutcomes struct {
	mu     sync.Mutex
	latest map[types.NamespacedName]scheduler.Outcome
}

func (h *heldOutcomes) Upsert(scheduler.Check) {}

func (h *heldOutcomes) SetBuilder(scheduler.Builder) {}

func (h *heldOutcomes) Remove(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.latest, key)
}

// Disown forgets the outcome, as the real scheduler does.
func (h *heldOutcomes) Disown(key types.NamespacedName) { h.Remove(key) }

// TakeOver forgets the outcome if it finished at or before seen, as the
// real scheduler does.
func (h *heldOutcomes) TakeOver(key types.NamespacedName, seen time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if o, ok := h.latest[key]; ok && !o.Time.After(seen) {
		delete(h.latest, key)
	}
}

func (h *heldOutcomes) Latest(key types.NamespacedName) (scheduler.Outcome, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.latest[key]
	return o, ok
}

// probed stores o as the latest outcome, with the streak the real
// scheduler would give it.
func (h *heldOutcomes) probed(o scheduler.Outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o.Streak = 1
	if prev, ok := h.latest[o.Key]; ok && prev.Result.Success == o.Result.Success {
		o.Streak = prev.Streak + 1
	}
	h.latest[o.Key] = o
}

// takeover is a second replica, "replica-a", run by hand: its reconciler
// reads a scheduler whose outcomes the test sets, and its Ownership the
// test switches.
type takeover struct {
	owner    *switchOwner
	held     *heldOutcomes
	recorder *events.FakeRecorder
	r        *controllers.WebCheckerReconciler
	ctx      context.Context
}

// newTakeover makes a replica that owns every checker until the test says
// otherwise.
func newTakeover(t *testing.T) *takeover {
	h := &takeover{
		owner:    &switchOwner{shard: "replica-a"},
		held:     &heldOutcomes{latest: map[types.NamespacedName]scheduler.Outcome{}},
		recorder: events.NewFakeRecorder(10),
	}
	h.owner.owns.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.ctx = ctx
	h.r = &controllers.WebCheckerReconciler{
		Client: k8sClient, Scheduler: h.held, Ownership: h.owner, Recorder: h.recorder,
		Trigger: controllers.NewTrigger(1),
	}
	return h
}

// reconcile runs one reconcile of key, and one more when that put the
// checker behind the others at a lower priority (a write that only renames
// status.shard), as the controller's queue would once it comes round.
func (h *takeover) reconcile(t *testing.T, key types.NamespacedName) {
	t.Helper()
	res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: key})
	require.NoError(t, err)
	if res.Priority != nil {
		_, err = h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: key})
		require.NoError(t, err)
	}
}

// TestNoStaleResultAfterOwnershipComesBack: a replica that lost a checker
// without reconciling it (fenced), and gets it back after another replica
// wrote a newer status, does not write the outcome it held from before:
// no write, no Event, until a new probe; then the new probe is written and
// lastTransitionTime moves forward.
func TestNoStaleResultAfterOwnershipComesBack(t *testing.T) {
	t.Parallel()
	// The suite's replica writes Ready True once, then hands the checker
	// over.
	_, _, key := startChecker(t, "comes-back", "/")
	handOverFromSuite(t, key)
	wc := getChecker(t, key)

	a := newTakeover(t)
	reconcile := func() { t.Helper(); a.reconcile(t, key) }
	up := scheduler.Outcome{Key: key, Generation: wc.Generation, Time: time.Now(),
		Result: probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}}

	// Owned: replica-a takes over and writes its probe.
	reconcile()
	a.held.probed(up)
	reconcile()
	mine := getChecker(t, key)
	require.Equal(t, "replica-a", mine.Status.Shard)
	require.Equal(t, metav1.ConditionTrue, ready(mine).Status)

	// Not owned (fenced: no reconcile); replica-b writes Ready False.
	a.owner.owns.Store(false)
	theirs := mine.DeepCopy()
	theirs.Status.Shard = "replica-b"
	down := time.Now().Add(time.Second).Truncate(time.Second)
	meta.SetStatusCondition(&theirs.Status.Conditions, metav1.Condition{
		Type: webcheckerv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: string(probing.ReasonTimeout),
		Message: "probe timed out", ObservedGeneration: theirs.Generation, LastTransitionTime: metav1.NewTime(down),
	})
	require.NoError(t, k8sClient.Status().Update(context.Background(), theirs))

	// Owned again: one reconcile writes nothing and records nothing.
	a.owner.owns.Store(true)
	reconcile()
	after := getChecker(t, key)
	assert.Equal(t, theirs.ResourceVersion, after.ResourceVersion, "the stale outcome was written: %+v", after.Status)
	assert.Empty(t, a.recorder.Events, "an Event was recorded for the stale outcome")

	// A new probe, with the same result as the stale one (the scheduler
	// notifies it: the take-over forgot the stale one): its reconcile
	// writes it, and lastTransitionTime moves forward.
	_, held := a.held.Latest(key)
	assert.False(t, held, "the stale outcome is still held")
	again := up
	again.Time = down.Add(time.Second)
	a.held.probed(again)
	reconcile()
	fresh := getChecker(t, key)
	assert.Equal(t, "replica-a", fresh.Status.Shard)
	assert.Equal(t, metav1.ConditionTrue, ready(fresh).Status)
	assert.False(t, ready(fresh).LastTransitionTime.Time.Before(down),
		"lastTransitionTime moved backwards: %s before %s", ready(fresh).LastTransitionTime, down)
	require.Len(t, a.recorder.Events, 1)
	assert.Contains(t, <-a.recorder.Events, controllers.EventReasonProbeSucceeded)
}

// TestPausedReplicaWritesOnceItsFencingEnds: a reconcile while the
// replica is paused (fenced, its checkers not lost) neither writes nor
// disowns: it waits, and the outcome that came meanwhile is written once
// the pause is over, with no new probe.
func TestPausedReplicaWritesOnceItsFencingEnds(t *testing.T) {
	t.Parallel()
	_, _, key := startChecker(t, "paused", "/")
	handOverFromSuite(t, key)
	wc := getChecker(t, key)

	a := newTakeover(t)
	up := scheduler.Outcome{Key: key, Generation: wc.Generation, Time: time.Now(),
		Result: probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}}
	a.reconcile(t, key) // the take-over
	a.held.probed(up)
	a.reconcile(t, key)
	mine := getChecker(t, key)
	require.Equal(t, "replica-a", mine.Status.Shard)
	require.Equal(t, metav1.ConditionTrue, ready(mine).Status)

	// Paused; a probe in flight when it began fails.
	a.owner.owns.Store(false)
	a.owner.paused.Store(true)
	down := up
	down.Time = up.Time.Add(time.Second)
	down.Result = probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "unexpected status code 503", StatusCode: 503}
	a.held.probed(down)
	res, err := a.r.Reconcile(a.ctx, ctrl.Request{NamespacedName: key})
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter, "a paused reconcile does not come back")
	assert.Equal(t, mine.ResourceVersion, getChecker(t, key).ResourceVersion, "written while paused")
	_, held := a.held.Latest(key)
	assert.True(t, held, "the outcome was forgotten (disowned) while paused")

	// The fencing ends: the retry writes the failure.
	a.owner.paused.Store(false)
	a.owner.owns.Store(true)
	a.reconcile(t, key)
	after := getChecker(t, key)
	assert.Equal(t, metav1.ConditionFalse, ready(after).Status)
	assert.EqualValues(t, 503, after.Status.HTTPStatusCode)
}

// TestTakeOverStartsFromTheStoredCondition: a replica that takes a checker
// over starts from the condition another replica stored, not from
// Pending, and needs failureThreshold failures to change it.
func TestTakeOverStartsFromTheStoredCondition(t *testing.T) {
	t.Parallel()
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	wc := newChecker(newNamespace(t), "taken-over", target.URL(), "/")
	wc.Spec.FailureThreshold = ptr.To[int32](2)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	stored := ready(waitReady(t, key, metav1.ConditionTrue, "", 3*time.Second)) // written by the suite's replica
	handOverFromSuite(t, key)

	a := newTakeover(t)
	reconcile := func() { t.Helper(); a.reconcile(t, key) }
	failed := scheduler.Outcome{Key: key, Generation: wc.Generation, Time: time.Now(),
		Result: probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "unexpected status code 503", StatusCode: 503}}

	reconcile() // the take-over
	a.held.probed(failed)
	reconcile()
	first := getChecker(t, key)
	assert.Equal(t, "replica-a", first.Status.Shard)
	assert.EqualValues(t, 503, first.Status.HTTPStatusCode)
	assert.Equal(t, stored.Status, ready(first).Status, "one failure of two changed the stored condition")
	assert.Equal(t, stored.LastTransitionTime, ready(first).LastTransitionTime)

	failed.Time = failed.Time.Add(time.Second)
	a.held.probed(failed)
	reconcile()
	assert.Equal(t, metav1.ConditionFalse, ready(getChecker(t, key)).Status)
}

// TestHandOverNeedsNoReconcile: a replica schedules the checkers it does
// not own, so that one it gains is probed at its next grid point and
// written with no reconcile in between (nothing waits for the API), and one
// it loses is not probed again.
func TestHandOverNeedsNoReconcile(t *testing.T) {
	t.Parallel()
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	owner := &switchOwner{shard: "handover-replica", namespace: newElsewhereNamespace(t)}
	mgr := sideManager(t, k8sConfig, nil)
	sched, err := setupReplica(mgr, replicaConfig{
		shardID:       owner.shard,
		ownership:     owner,
		prober:        probing.NewHTTPProber(probing.ProberOptions{DNSServer: dns.Addr()}),
		initialJitter: 100 * time.Millisecond,
		logger:        ctrl.Log.WithName("handover"),
		registerer:    prometheus.NewRegistry(), // a second replica in this process
	})
	require.NoError(t, err)
	framework.RunInTest(t, mgr)

	wc := newChecker(owner.namespace, "handed-over", target.URL(), "/handover")
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)

	// Owned by nobody yet: reconciled and scheduled, but neither probed
	// nor written. The side manager may take seconds to start its
	// controller on a loaded machine: the hand-over below starts once the
	// check is scheduled.
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(sched.Snapshot(), func(c scheduler.CheckState) bool { return c.Key == key })
	}, 30*time.Second, poll, "the side replica never scheduled the checker")
	assert.Never(t, func() bool { return target.Count("/handover") > 0 }, 2*interval+500*time.Millisecond, poll, "probed while not owned")
	assert.Empty(t, getChecker(t, key).Status.Conditions, "status written while not owned")

	// Gained, with nothing to reconcile it: probed at its next grid point,
	// and the first result written under this shard. The margin beyond
	// that grid point is for a loaded machine (this package's tests run in
	// parallel under -race on two CPUs): without the hand-over, nothing
	// would ever probe it.
	owner.owns.Store(true)
	require.Eventually(t, func() bool { return target.Count("/handover") > 0 }, interval+5*time.Second, poll, "a gained checker was not probed without a reconcile")
	written := waitReady(t, key, metav1.ConditionTrue, "", 5*time.Second)
	assert.Equal(t, owner.shard, written.Status.Shard)

	// Lost: no probe starts any more.
	owner.owns.Store(false)
	probed := target.Count("/handover")
	assert.Never(t, func() bool { return target.Count("/handover") > probed }, 2*interval+500*time.Millisecond, poll, "probed after it was lost")
}
