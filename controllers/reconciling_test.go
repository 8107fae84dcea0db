package controllers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// TestQuorumReconcilingUntilAMajorityOfTheGeneration: with several vantage
// points the owner writes the new generation's observedGeneration before
// its entries come in, keeping the Ready condition of the last; it says
// Reconciling until a majority of the new generation decides, and the
// write of that decision removes it.
func TestQuorumReconcilingUntilAMajorityOfTheGeneration(t *testing.T) {
	t.Parallel()
	_, replicas, wc := startQuorum(t)
	key := client.ObjectKeyFromObject(wc)
	reconciling := func(wc *webcheckerv1alpha1.WebChecker) *metav1.Condition {
		return meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReconciling)
	}

	replicas["shard-b"].probe(t, wc, true)
	replicas["shard-a"].probe(t, wc, true)
	got := getChecker(t, key)
	require.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, webcheckerv1alpha1.ConditionReady))
	assert.Nil(t, reconciling(got), "decided at generation 1")

	got.Spec.Path = "/v2"
	require.NoError(t, k8sClient.Update(context.Background(), got))
	replicas["shard-a"].reconcile(t, key)
	got = getChecker(t, key)
	require.EqualValues(t, 2, got.Generation)
	assert.EqualValues(t, 2, got.Status.ObservedGeneration)
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, webcheckerv1alpha1.ConditionReady), "kept from generation 1")
	c := reconciling(got)
	require.NotNil(t, c, "no Reconciling before a majority of generation 2: %+v", got.Status.Conditions)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, webcheckerv1alpha1.ReasonAwaitingResult, c.Reason)
	assert.EqualValues(t, 2, c.ObservedGeneration)

	replicas["shard-b"].probe(t, got, true)
	replicas["shard-a"].probe(t, got, true)
	got = getChecker(t, key)
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, webcheckerv1alpha1.ConditionReady))
	assert.Nil(t, reconciling(got), "decided at generation 2")
}
