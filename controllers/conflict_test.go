package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// staleReader serves one old copy of a WebChecker, as a lagging informer
// cache would; every other call goes to the API server.
type staleReader struct {
	client.Client
	old *webcheckerv1alpha1.WebChecker
}

func (r staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if wc, ok := obj.(*webcheckerv1alpha1.WebChecker); ok && key == client.ObjectKeyFromObject(r.old) {
		r.old.DeepCopyInto(wc)
		return nil
	}
	return r.Client.Get(ctx, key, obj, opts...)
}

// TestStatusIsNeverOverwrittenBlindly lets a reconciler that read an
// outdated object try to write status: the API server rejects the patch
// (optimistic lock on resourceVersion), the newer status stays, and the
// reconciler asks to retry instead of failing.
func TestStatusIsNeverOverwrittenBlindly(t *testing.T) {
	t.Parallel()
	_, _, key := startChecker(t, "contested", "/")
	current := getChecker(t, key)

	// A copy from before the suite's replica wrote the status (the
	// resourceVersion of any older state conflicts the same way).
	old := current.DeepCopy()
	old.ResourceVersion = "1"
	old.Status = webcheckerv1alpha1.WebCheckerStatus{}

	sched, err := scheduler.New(scheduler.Options{Prober: probing.ProberFunc(func(context.Context, probing.Target) probing.Result { return probing.Result{} })})
	require.NoError(t, err)
	r := &controllers.WebCheckerReconciler{
		Client:    staleReader{Client: k8sClient, old: old},
		Scheduler: sched,
		Ownership: suiteOwner("stale-writer"),
		Recorder:  events.NewFakeRecorder(10),
		Trigger:   controllers.NewTrigger(1),
	}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName(key)})
	require.NoError(t, err, "a conflict is retried, not reported as an error")
	assert.Positive(t, res.RequeueAfter, "a conflict must be retried")

	after := getChecker(t, key)
	assert.Equal(t, testShardID, after.Status.Shard, "the stale writer overwrote the status")
	assert.Equal(t, current.Status.Conditions, after.Status.Conditions)
}

// TestNoChangeLostWhileTheCacheLags: a reconcile that reads a copy from
// before this replica's own latest status write (the informer cache has
// not seen it yet) must not take the status as unchanged: it looks again
// shortly, and the change is written once the copy is current. Without
// that, a success right after a written failure compared equal to the
// stale Ready=True and the checker stayed False for good.
func TestNoChangeLostWhileTheCacheLags(t *testing.T) {
	t.Parallel()
	_, wc, key := startChecker(t, "lagging-cache", "/")
	handOverFromSuite(t, key)
	a := newTakeover(t)
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := a.r.Reconcile(a.ctx, ctrl.Request{NamespacedName: key})
		require.NoError(t, err)
		return res
	}
	outcome := func(success bool, at time.Time) scheduler.Outcome {
		o := scheduler.Outcome{Key: key, Generation: wc.Generation, Time: at,
			Result: probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "unexpected status code 503", StatusCode: 503}}
		if success {
			o.Result = probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}
		}
		return o
	}

	a.reconcile(t, key) // the take-over
	a.held.probed(outcome(true, time.Now()))
	a.reconcile(t, key) // a rename: written on the second reconcile
	up := getChecker(t, key)
	require.Equal(t, "replica-a", up.Status.Shard)
	require.Equal(t, metav1.ConditionTrue, ready(up).Status)

	a.held.probed(outcome(false, time.Now().Add(time.Second)))
	reconcile()
	down := getChecker(t, key)
	require.Equal(t, metav1.ConditionFalse, ready(down).Status)

	// The cache still serves the copy from before the False write.
	a.r.Client = staleReader{Client: k8sClient, old: up}
	a.held.probed(outcome(true, time.Now().Add(2*time.Second)))
	res := reconcile()
	assert.Positive(t, res.RequeueAfter, "a reconcile on a copy older than its own write did not ask to look again")
	assert.Equal(t, down.ResourceVersion, getChecker(t, key).ResourceVersion)

	// Caught up: the success is written.
	a.r.Client = k8sClient
	assert.Zero(t, reconcile().RequeueAfter)
	assert.Equal(t, metav1.ConditionTrue, ready(getChecker(t, key)).Status)
}
