package controllers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/probetest"
)

// setSuspend patches spec.suspend of the checker key to suspend.
func setSuspend(t *testing.T, key types.NamespacedName, suspend bool) {
	t.Helper()
	wc := getChecker(t, key)
	patch := client.MergeFrom(wc.DeepCopy())
	wc.Spec.Suspend = ptr.To(suspend)
	require.NoError(t, k8sClient.Patch(context.Background(), wc, patch))
}

// TestSuspendStopsProbesAndResumes suspends a Ready checker on a replica
// on a fake clock: it leaves the scheduler, no probe reaches the target
// for three intervals, its series are gone, Ready turns Unknown/Suspended
// in one write with one Event; resumed, it is probed before the clock
// moves (at once, not at its next grid point) and turns Ready again.
func TestSuspendStopsProbesAndResumes(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	target, wc, key := c.startChecker(t, "suspended", "/")
	series := func(name string) map[string]float64 { return checkerSeriesIn(t, c.registry, name, key) }
	require.NotEmpty(t, series("webchecker_probe_success"))

	setSuspend(t, key, true)
	suspended := waitReady(t, key, metav1.ConditionUnknown, webcheckerv1alpha1.ReasonSuspended, waitFor)
	cond := ready(suspended)
	assert.Equal(t, "Probing is suspended: spec.suspend is true", cond.Message)
	assert.Equal(t, suspended.Generation, cond.ObservedGeneration)
	assert.Equal(t, suspended.Generation, suspended.Status.ObservedGeneration)
	stamped(t, t0, cond, "the suspension")
	assert.Empty(t, series("webchecker_probe_success"), "a suspended checker has no series")
	assert.Empty(t, series("webchecker_probes_total"))

	// Nothing is scheduled: no probe comes for three intervals, and the
	// status is not written again.
	assert.Zero(t, c.sched.Len(), "a suspended checker is still scheduled")
	hits := target.Count("/")
	c.idle(3)
	assert.Never(t, func() bool { return target.Count("/") != hits }, settle, poll, "a suspended checker was probed")
	assertStatusStays(t, key, suspended.ResourceVersion, "the suspended status was written more than once")
	assert.Equal(t, []string{"Probing is suspended: spec.suspend is true"}, eventNotes(t, wc.Namespace, wc.Name, "Suspended"))

	// Resumed: the first probe comes before the clock moves, and Ready
	// follows it.
	setSuspend(t, key, false)
	require.Eventually(t, func() bool { return target.Count("/") > hits }, waitFor, poll, "no probe before the clock moved on resuming")
	up := waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	assert.Equal(t, up.Generation, ready(up).ObservedGeneration)
	stamped(t, c.clock.Now(), ready(up), "the first probe after resuming")
	require.Eventually(t, func() bool { return len(series("webchecker_probe_success")) == 1 }, waitFor, poll)
	require.Eventually(t, func() bool {
		// A first True (after creation, after resuming) records none.
		return sortedReasons(t, wc.Namespace, wc.Name) == "Suspended"
	}, waitFor, poll,
		"events: %s", eventReasons(t, wc.Namespace, wc.Name))
}

// TestCreatedSuspendedIsNeverProbed creates a checker suspended on a
// replica on a fake clock: it is never scheduled, nothing reaches the
// target over three intervals, and Suspended is its first and only status
// write.
func TestCreatedSuspendedIsNeverProbed(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	wc := newChecker(c.namespace, "born-suspended", target.URL(), "/")
	wc.Spec.Suspend = ptr.To(true)
	key := client.ObjectKeyFromObject(wc)
	require.NoError(t, k8sClient.Create(context.Background(), wc))

	suspended := waitReady(t, key, metav1.ConditionUnknown, webcheckerv1alpha1.ReasonSuspended, waitFor)
	assert.Zero(t, c.sched.Len(), "a suspended checker is scheduled")
	c.idle(3)
	assert.Never(t, func() bool { return target.Count("/") > 0 }, settle, poll, "a suspended checker was probed")
	assertStatusStays(t, key, suspended.ResourceVersion, "the suspended status was written more than once")
	assert.Equal(t, "Suspended", eventReasons(t, wc.Namespace, wc.Name))
}

// TestSuspendIsDefaultedAndValidated checks the field at admission: false
// by default, and only a boolean is accepted.
func TestSuspendIsDefaultedAndValidated(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	bare := newChecker(ns, "not-suspended", "example.com", "/")
	require.NoError(t, k8sClient.Create(context.Background(), bare, client.DryRunAll))
	assert.Equal(t, ptr.To(webcheckerv1alpha1.DefaultSuspend), bare.Spec.Suspend)

	for name, value := range map[string]any{"string": "yes", "number": 1} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": webcheckerv1alpha1.GroupVersion.String(),
				"kind":       "WebChecker",
				"metadata":   map[string]any{"namespace": ns, "name": "bad-suspend-" + name},
				"spec":       map[string]any{"host": "example.com", "suspend": value},
			}}
			err := k8sClient.Create(context.Background(), u, client.DryRunAll)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "spec.suspend")
		})
	}
}
