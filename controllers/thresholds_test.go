package controllers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/probing/probetest"
)

// TestThresholdsDampReady runs a checker with failureThreshold 3 and
// successThreshold 2 on a replica on a fake clock, stepped one probe at a
// time: Ready stays True through two failed probes and turns False at the
// third (stamped with that probe's time); it stays False after one
// successful probe and turns True at the second. One Event per change.
func TestThresholdsDampReady(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	target := probetest.NewTarget()
	defer target.Close()
	wc := newChecker(c.namespace, "damped", target.URL(), "/")
	wc.Spec.FailureThreshold, wc.Spec.SuccessThreshold = ptr.To[int32](3), ptr.To[int32](2)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	// Before the first result there is nothing to hold on to: the first
	// probe, at t0, decides.
	up := waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	stamped(t, t0, ready(up), "the first result")

	target.SetStatus(http.StatusInternalServerError)
	c.step(t, key)
	// The first failure is written at once for its status code, Ready held.
	require.Eventually(t, func() bool { return getChecker(t, key).Status.HTTPStatusCode == http.StatusInternalServerError }, waitFor, poll,
		"the status code is not the latest probe's")
	assert.Equal(t, metav1.ConditionTrue, ready(getChecker(t, key)).Status, "Ready turned False at the first failure")
	c.step(t, key)
	assertReadyStays(t, key, metav1.ConditionTrue, "Ready turned False at the second failure")

	third := c.step(t, key)
	down := waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", waitFor)
	stamped(t, third, ready(down), "Ready turned False before the third failure")

	target.SetStatus(http.StatusOK)
	c.step(t, key)
	require.Eventually(t, func() bool { return getChecker(t, key).Status.HTTPStatusCode == http.StatusOK }, waitFor, poll,
		"the status code is not the latest probe's")
	held := getChecker(t, key)
	assert.Equal(t, metav1.ConditionFalse, ready(held).Status, "Ready turned True after one success")
	assert.Equal(t, "UnexpectedStatus", ready(held).Reason)
	assertReadyStays(t, key, metav1.ConditionFalse, "Ready turned True after one success")

	second := c.step(t, key)
	again := waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	stamped(t, second, ready(again), "Ready turned True before the second success")
	assert.Equal(t, 6, target.Count("/"), "one probe at t0, then one per step")

	// The first True records no Event; the recovery does.
	require.Eventually(t, func() bool { return strings.Count(eventReasons(t, c.namespace, wc.Name), "ProbeSucceeded") == 1 }, waitFor, poll)
	assert.Equal(t, sortedList("ProbeFailed,ProbeSucceeded"), sortedReasons(t, c.namespace, wc.Name))
}
