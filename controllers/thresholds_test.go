package controllers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/probing/probetest"
)

// betweenProbes waits for the next probe of path on target and a little
// more, so that what the test changes next is seen first by the probe
// after (probes are an interval apart).
func betweenProbes(t *testing.T, target *probetest.Target, path string) {
	t.Helper()
	n := target.Count(path)
	require.Eventually(t, func() bool { return target.Count(path) > n }, 2*interval+time.Second, poll/5)
	time.Sleep(200 * time.Millisecond)
}

// TestThresholdsDampReady runs a checker with failureThreshold 3 and
// successThreshold 2 against the real manager: Ready stays True through
// two failed probes and turns False at the third; it stays False after one
// successful probe and turns True at the second. One Event per change.
func TestThresholdsDampReady(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	target := probetest.NewTarget()
	defer target.Close()
	wc := newChecker(ns, "damped", target.URL(), "/")
	wc.Spec.FailureThreshold, wc.Spec.SuccessThreshold = ptr.To[int32](3), ptr.To[int32](2)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	// Before the first result there is nothing to hold on to: the first
	// probe decides.
	waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", 3*time.Second)

	betweenProbes(t, target, "/")
	target.SetStatus(http.StatusInternalServerError)
	failing := target.Count("/")
	require.Eventually(t, func() bool { return target.Count("/") >= failing+2 }, 2*interval+2*time.Second, poll/5)
	time.Sleep(300 * time.Millisecond) // the second failure is written (its status code) or ignored
	held := getChecker(t, key)
	require.Equal(t, failing+2, target.Count("/"), "the probes came faster than the interval: the test cannot tell")
	assert.Equal(t, metav1.ConditionTrue, ready(held).Status, "Ready turned False before the third failure")
	assert.EqualValues(t, http.StatusInternalServerError, held.Status.HTTPStatusCode, "the status code is the latest probe's")

	down := waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", interval+2*time.Second)
	require.GreaterOrEqual(t, target.Count("/"), failing+3)
	third := target.Hits()[failing+2].Time
	assert.False(t, ready(down).LastTransitionTime.Time.Before(third.Truncate(time.Second)),
		"Ready turned False at %s, before the third failure at %s", ready(down).LastTransitionTime, third)

	betweenProbes(t, target, "/")
	target.SetStatus(http.StatusOK)
	passing := target.Count("/")
	require.Eventually(t, func() bool { return target.Count("/") >= passing+1 }, 2*interval+2*time.Second, poll/5)
	time.Sleep(300 * time.Millisecond)
	held = getChecker(t, key)
	require.Equal(t, passing+1, target.Count("/"), "the probes came faster than the interval: the test cannot tell")
	assert.Equal(t, metav1.ConditionFalse, ready(held).Status, "Ready turned True after one success")
	assert.Equal(t, "UnexpectedStatus", ready(held).Reason)

	waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", interval+2*time.Second)
	require.GreaterOrEqual(t, target.Count("/"), passing+2)

	// The first True records no Event; the recovery does.
	require.Eventually(t, func() bool { return strings.Count(eventReasons(t, ns, wc.Name), "ProbeSucceeded") == 1 }, 5*time.Second, poll)
	assert.Equal(t, sortedList("ProbeFailed,ProbeSucceeded"), sortedReasons(t, ns, wc.Name))
}
