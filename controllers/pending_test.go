package controllers_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/probing/probetest"
)

// written is one status write seen by watchWrites: the Ready condition it
// stored, the status of its Reconciling condition ("" for none), and when
// it was seen.
type written struct {
	ready       metav1.Condition
	reconciling metav1.ConditionStatus
	at          time.Time
}

// watchWrites creates wc and returns, in order, every change of it that
// the API server reports until its Ready condition is True (or within
// passes), with the time of its creation. Nothing but the replica changes
// wc, so each change is one status write.
func watchWrites(t *testing.T, wc *webcheckerv1alpha1.WebChecker, within time.Duration) (created time.Time, writes []written) {
	t.Helper()
	wcl, err := client.NewWithWatch(k8sConfig, client.Options{Scheme: k8sClient.Scheme()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	w, err := wcl.Watch(ctx, &webcheckerv1alpha1.WebCheckerList{}, client.InNamespace(wc.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", wc.Name)})
	require.NoError(t, err)
	defer w.Stop()
	created = time.Now()
	require.NoError(t, k8sClient.Create(ctx, wc))
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended")
			if ev.Type != watch.Modified {
				continue
			}
			got := ev.Object.(*webcheckerv1alpha1.WebChecker)
			c := meta.FindStatusCondition(got.Status.Conditions, webcheckerv1alpha1.ConditionReady)
			require.NotNil(t, c, "a write without a Ready condition: %+v", got.Status)
			w := written{ready: *c, at: time.Now()}
			if r := meta.FindStatusCondition(got.Status.Conditions, webcheckerv1alpha1.ConditionReconciling); r != nil {
				w.reconciling = r.Status
			}
			writes = append(writes, w)
			if c.Status == metav1.ConditionTrue {
				return created, writes
			}
		case <-ctx.Done():
			t.Fatalf("not Ready within %s; writes: %+v", within, writes)
		}
	}
}

// TestNewCheckerIsWrittenOnce: a new checker whose first probe is fast gets
// one status write, the result, and never a Pending before it.
func TestNewCheckerIsWrittenOnce(t *testing.T) {
	t.Parallel()
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	wc := newChecker(newNamespace(t), "written-once", target.URL(), "/")

	created, writes := watchWrites(t, wc, 10*time.Second)
	require.Len(t, writes, 1, "writes before Ready: %+v", writes)
	assert.Equal(t, "ProbeSucceeded", writes[0].ready.Reason)
	assert.Empty(t, writes[0].reconciling, "Reconciling with the result")
	t.Logf("create -> Ready=True in %s", writes[0].at.Sub(created).Round(time.Millisecond))
	got := getChecker(t, client.ObjectKeyFromObject(wc))
	assert.Equal(t, testShardID, got.Status.Shard)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
}

// TestSlowFirstProbeShowsPending: a new checker whose first probe takes
// longer than the grace shows Pending, with Reconciling True, once the
// grace has passed, then its result, without Reconciling.
func TestSlowFirstProbeShowsPending(t *testing.T) {
	t.Parallel()
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	target.SetDelay(controllers.PendingGrace + 2*time.Second)
	wc := newChecker(newNamespace(t), "slow-first-probe", target.URL(), "/")
	wc.Spec.Interval = &metav1.Duration{Duration: 20 * time.Second}
	wc.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Second}

	created, writes := watchWrites(t, wc, 20*time.Second)
	require.Len(t, writes, 2, "writes before Ready: %+v", writes)
	pending := writes[0]
	assert.Equal(t, metav1.ConditionUnknown, pending.ready.Status)
	assert.Equal(t, "Pending", pending.ready.Reason)
	assert.Equal(t, metav1.ConditionTrue, pending.reconciling, "Reconciling with Pending")
	assert.GreaterOrEqual(t, pending.at.Sub(created), controllers.PendingGrace-200*time.Millisecond, "Pending written before the grace passed")
	assert.Equal(t, "ProbeSucceeded", writes[1].ready.Reason)
	assert.Empty(t, writes[1].reconciling, "Reconciling with the result")
	assert.EqualValues(t, http.StatusOK, getChecker(t, client.ObjectKeyFromObject(wc)).Status.HTTPStatusCode)
}
