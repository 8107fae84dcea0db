package controllers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
