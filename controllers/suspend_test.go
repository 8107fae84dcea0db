package controllers_test

import (
	"context"
	"testing"
	"time"

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

// TestSuspendStopsProbesAndResumes suspends a Ready checker: no probe
// reaches the target, its series are gone, Ready turns Unknown/Suspended
// in one write with one Event; resumed, it is probed within the initial
// jitter and turns Ready again.
func TestSuspendStopsProbesAndResumes(t *testing.T) {
	t.Parallel()
	target, wc, key := startChecker(t, "suspended", "/")
	require.NotEmpty(t, checkerSeries(t, "webchecker_probe_success", key))

	setSuspend(t, key, true)
	suspended := waitReady(t, key, metav1.ConditionUnknown, webcheckerv1alpha1.ReasonSuspended, 3*time.Second)
	cond := ready(suspended)
	assert.Equal(t, "Probing is suspended: spec.suspend is true", cond.Message)
	assert.Equal(t, suspended.Generation, cond.ObservedGeneration)
	assert.Equal(t, suspended.Generation, suspended.Status.ObservedGeneration)
	assert.Empty(t, checkerSeries(t, "webchecker_probe_success", key), "a suspended checker has no series")
	assert.Empty(t, checkerSeries(t, "webchecker_probes_total", key))

	// A probe that started before the suspension may still land: count
	// from a moment later, then no probe may come for three intervals, and
	// the status is not written again.
	time.Sleep(300 * time.Millisecond)
	hits := target.Count("/")
	time.Sleep(3*interval + 500*time.Millisecond)
	assert.Equal(t, hits, target.Count("/"), "a suspended checker was probed")
	assert.Equal(t, suspended.ResourceVersion, getChecker(t, key).ResourceVersion, "the suspended status was written more than once")
	assert.Equal(t, []string{"Probing is suspended: spec.suspend is true"}, eventNotes(t, wc.Namespace, wc.Name, "Suspended"))

	// Resumed: the first probe comes within the initial jitter (200ms in
	// this suite), well within a second, and Ready follows it.
	setSuspend(t, key, false)
	resumed := time.Now()
	require.Eventually(t, func() bool { return target.Count("/") > hits }, time.Second, 10*time.Millisecond, "no probe within a second of resuming")
	t.Logf("resume -> first probe in %s", time.Since(resumed).Round(time.Millisecond))
	up := waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", 2*time.Second)
	assert.Equal(t, up.Generation, ready(up).ObservedGeneration)
	require.Eventually(t, func() bool { return len(checkerSeries(t, "webchecker_probe_success", key)) == 1 }, time.Second, poll)
	require.Eventually(t, func() bool {
		// A first True (after creation, after resuming) records none.
		return sortedReasons(t, wc.Namespace, wc.Name) == "Suspended"
	}, 5*time.Second, poll,
		"events: %s", eventReasons(t, wc.Namespace, wc.Name))
}

// TestCreatedSuspendedIsNeverProbed creates a checker suspended: nothing
// reaches the target, and Suspended is its first and only status write.
func TestCreatedSuspendedIsNeverProbed(t *testing.T) {
	t.Parallel()
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	wc := newChecker(newNamespace(t), "born-suspended", target.URL(), "/")
	wc.Spec.Suspend = ptr.To(true)
	key := client.ObjectKeyFromObject(wc)
	require.NoError(t, k8sClient.Create(context.Background(), wc))

	suspended := waitReady(t, key, metav1.ConditionUnknown, webcheckerv1alpha1.ReasonSuspended, 3*time.Second)
	time.Sleep(2*interval + 500*time.Millisecond)
	assert.Zero(t, target.Count("/"), "a suspended checker was probed")
	assert.Equal(t, suspended.ResourceVersion, getChecker(t, key).ResourceVersion, "the suspended status was written more than once")
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
