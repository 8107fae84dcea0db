package controllers_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	"github.com/networkio/webchecker/probing/scheduler"
)

// switchOwner is an Ownership that a test turns on and off.
type switchOwner struct {
	shard string
	owns  atomic.Bool
}

func (o *switchOwner) ShardID() string                { return o.shard }
func (o *switchOwner) Owns(types.NamespacedName) bool { return o.owns.Load() }

// heldOutcomes is a Scheduler whose latest outcomes the test sets; like the
// real one, it keeps an outcome while the check is upserted unchanged.
type heldOutcomes struct {
	mu     sync.Mutex
	latest map[types.NamespacedName]scheduler.Outcome
}

func (h *heldOutcomes) Upsert(scheduler.Check) {}

func (h *heldOutcomes) Remove(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.latest, key)
}

func (h *heldOutcomes) Latest(key types.NamespacedName) (scheduler.Outcome, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.latest[key]
	return o, ok
}

// probed stores o as the latest outcome and tells the tracker, as the
// scheduler's worker does.
func (h *heldOutcomes) probed(tracker *controllers.Tracker, o scheduler.Outcome) {
	h.mu.Lock()
	h.latest[o.Key] = o
	h.mu.Unlock()
	tracker.ProbeFinished(o.Key, o.Result)
}

// takeover is a second replica, "replica-a", run by hand: its reconciler
// reads a scheduler whose outcomes the test sets, and its Ownership the
// test switches.
type takeover struct {
	owner    *switchOwner
	held     *heldOutcomes
	tracker  *controllers.Tracker
	notified chan types.NamespacedName
	recorder *events.FakeRecorder
	r        *controllers.WebCheckerReconciler
	ctx      context.Context
}

// newTakeover starts the Tracker of a replica that owns every checker until
// the test says otherwise.
func newTakeover(t *testing.T) *takeover {
	h := &takeover{
		owner:    &switchOwner{shard: "replica-a"},
		held:     &heldOutcomes{latest: map[types.NamespacedName]scheduler.Outcome{}},
		notified: make(chan types.NamespacedName, 10),
		recorder: events.NewFakeRecorder(10),
	}
	h.owner.owns.Store(true)
	h.tracker = controllers.NewTracker(func(_ context.Context, key types.NamespacedName) { h.notified <- key })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.ctx = ctx
	go func() { _ = h.tracker.Start(ctx) }()
	h.r = &controllers.WebCheckerReconciler{
		Client: k8sClient, Scheduler: h.held, Ownership: h.owner, Recorder: h.recorder,
		Trigger: controllers.NewTrigger(1), Tracker: h.tracker,
	}
	return h
}

// reconcile runs one reconcile of key.
func (h *takeover) reconcile(t *testing.T, key types.NamespacedName) {
	t.Helper()
	_, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: key})
	require.NoError(t, err)
}

// TestNoStaleResultAfterOwnershipComesBack: a replica that lost a checker
// without reconciling it (fenced), and gets it back after another replica
// wrote a newer status, does not write the outcome it held from before:
// no write, no Event, until a new probe; then the new probe is written and
// lastTransitionTime moves forward.
func TestNoStaleResultAfterOwnershipComesBack(t *testing.T) {
	t.Parallel()
	// The suite's replica writes Ready True once and then has nothing to
	// change (a steady target, no spec change).
	_, _, key := startChecker(t, "comes-back", "/")
	wc := getChecker(t, key)

	a := newTakeover(t)
	reconcile := func() { t.Helper(); a.reconcile(t, key) }
	up := scheduler.Outcome{Key: key, Generation: wc.Generation, Time: time.Now(),
		Result: probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}}

	// Owned: replica-a takes over and writes its probe.
	reconcile()
	a.held.probed(a.tracker, up)
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
	// would not notify it): the tracker asks for a reconcile, which writes
	// it, and lastTransitionTime moves forward.
	again := up
	again.Time = down.Add(time.Second)
	a.held.probed(a.tracker, again)
	select {
	case got := <-a.notified:
		assert.Equal(t, key, got)
	case <-time.After(5 * time.Second):
		t.Fatal("the first probe after the take-over asked for no reconcile")
	}
	reconcile()
	fresh := getChecker(t, key)
	assert.Equal(t, "replica-a", fresh.Status.Shard)
	assert.Equal(t, metav1.ConditionTrue, ready(fresh).Status)
	assert.False(t, ready(fresh).LastTransitionTime.Time.Before(down),
		"lastTransitionTime moved backwards: %s before %s", ready(fresh).LastTransitionTime, down)
	require.Len(t, a.recorder.Events, 1)
	assert.Contains(t, <-a.recorder.Events, controllers.EventReasonProbeSucceeded)
}

// TestTakeOverStartsFromTheStoredCondition: a replica that takes a checker
// over starts from the condition another replica stored, not from
// Pending, and needs failureThreshold failures to change it.
func TestTakeOverStartsFromTheStoredCondition(t *testing.T) {
	t.Parallel()
	target := framework.NewTarget()
	t.Cleanup(target.Close)
	wc := newChecker(newNamespace(t), "taken-over", target.URL(), "/")
	wc.Spec.FailureThreshold = ptr.To[int32](2)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	stored := ready(waitReady(t, key, metav1.ConditionTrue, "", 3*time.Second)) // written by the suite's replica

	a := newTakeover(t)
	reconcile := func() { t.Helper(); a.reconcile(t, key) }
	failed := scheduler.Outcome{Key: key, Generation: wc.Generation, Time: time.Now(),
		Result: probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "unexpected status code 503", StatusCode: 503}}

	reconcile() // the take-over
	a.held.probed(a.tracker, failed)
	reconcile()
	first := getChecker(t, key)
	assert.Equal(t, "replica-a", first.Status.Shard)
	assert.EqualValues(t, 503, first.Status.HTTPStatusCode)
	assert.Equal(t, stored.Status, ready(first).Status, "one failure of two changed the stored condition")
	assert.Equal(t, stored.LastTransitionTime, ready(first).LastTransitionTime)

	failed.Time = failed.Time.Add(time.Second)
	a.held.probed(a.tracker, failed)
	select {
	case <-a.notified:
	case <-time.After(5 * time.Second):
		t.Fatal("the second failure asked for no reconcile")
	}
	reconcile()
	assert.Equal(t, metav1.ConditionFalse, ready(getChecker(t, key)).Status)
}
