package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/probetest"
)

// failureWindow sets spec.failureWindow to failures of probes.
func failureWindow(failures, probes int32) func(*webcheckerv1alpha1.WebCheckerSpec) {
	return func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.FailureWindow = &webcheckerv1alpha1.FailureWindow{Failures: failures, Probes: probes}
	}
}

// TestFailureWindowAdmission: the API server takes a window of 1 to 64
// probes with 1 to probes failures, beside thresholds of 1 only, and says
// why it refuses any other.
func TestFailureWindowAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	invalid := map[string]struct {
		mutate func(*webcheckerv1alpha1.WebCheckerSpec)
		want   string
	}{
		"no probes":      {failureWindow(1, 0), "spec.failureWindow.probes in body should be greater than or equal to 1"},
		"65 probes":      {failureWindow(1, 65), "spec.failureWindow.probes in body should be less than or equal to 64"},
		"no failures":    {failureWindow(0, 6), "spec.failureWindow.failures in body should be greater than or equal to 1"},
		"failures above": {failureWindow(7, 6), "failureWindow.failures must be at most failureWindow.probes"},
		"with failureThreshold 2": {then(failureWindow(2, 6), func(s *webcheckerv1alpha1.WebCheckerSpec) { s.FailureThreshold = ptr.To[int32](2) }),
			"failureWindow decides both ways: failureThreshold and successThreshold must be 1 (their default) with it"},
		"with successThreshold 3": {then(failureWindow(2, 6), func(s *webcheckerv1alpha1.WebCheckerSpec) { s.SuccessThreshold = ptr.To[int32](3) }),
			"failureWindow decides both ways"},
	}
	i := 0
	for name, tc := range invalid {
		i++
		t.Run(name, func(t *testing.T) {
			assertRejected(t, newChecker(ns, fmt.Sprintf("invalid-window-%d", i), "http://example.com", "/"), tc.mutate, tc.want)
		})
	}
	valid := map[string]func(*webcheckerv1alpha1.WebCheckerSpec){
		"2 of 6":   failureWindow(2, 6),
		"1 of 1":   failureWindow(1, 1),
		"64 of 64": failureWindow(64, 64),
		"with thresholds of 1": then(failureWindow(3, 10), func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.FailureThreshold, s.SuccessThreshold = ptr.To[int32](1), ptr.To[int32](1)
		}),
	}
	for name, mutate := range valid {
		i++
		t.Run(name, func(t *testing.T) {
			wc := newChecker(ns, fmt.Sprintf("valid-window-%d", i), "http://example.com", "/")
			mutate(&wc.Spec)
			want := *wc.Spec.FailureWindow
			require.NoError(t, k8sClient.Create(context.Background(), wc, client.DryRunAll))
			assert.Equal(t, want, *wc.Spec.FailureWindow)
			assert.Equal(t, ptr.To[int32](1), wc.Spec.FailureThreshold, "the default beside a window")
		})
	}
	// A required field left out (as kubectl apply of a YAML without it).
	missing := newChecker(ns, "window-without-failures", "http://example.com", "/")
	assertRejected(t, missing, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.FailureWindow = &webcheckerv1alpha1.FailureWindow{Probes: 6}
	}, "spec.failureWindow.failures")
}

// TestFailureWindowJudgesReady runs a checker with a failure window of 2
// of 4 on a replica on a fake clock, stepped one probe at a time: one
// failure among successes keeps Ready True, the second failure of four
// turns it False with a message that counts them, a success then does
// not turn it True while two of the last four failed, and the success
// that leaves one failure of four does. One Event per change.
func TestFailureWindowJudgesReady(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	target := probetest.NewTarget()
	defer target.Close()
	wc := newChecker(c.namespace, "windowed", target.URL(), "/")
	failureWindow(2, 4)(&wc.Spec)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor) // S at t0

	// probe answers status code, and waits until its code is written.
	probe := func(code int) {
		t.Helper()
		target.SetStatus(code)
		c.step(t, key)
		require.Eventually(t, func() bool { return getChecker(t, key).Status.HTTPStatusCode == int32(code) }, waitFor, poll,
			"the status code is not the latest probe's")
	}
	probe(http.StatusServiceUnavailable) // S F: 1 of 2 failed
	assertReadyStays(t, key, metav1.ConditionTrue, "Ready turned False at 1 failure of 2")
	probe(http.StatusOK) // S F S
	assertReadyStays(t, key, metav1.ConditionTrue, "Ready turned False at 1 failure of 3")

	target.SetStatus(http.StatusServiceUnavailable)
	tripped := c.step(t, key) // S F S F: 2 of 4
	down := ready(waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", waitFor))
	stamped(t, tripped, down, "Ready turned False before the second failure")
	assert.True(t, strings.HasPrefix(down.Message, "2 of the last 4 probes failed (latest: "), down.Message)
	assert.Contains(t, down.Message, "503")

	probe(http.StatusOK) // F S F S: 2 of 4 still
	held := ready(getChecker(t, key))
	assert.Equal(t, metav1.ConditionFalse, held.Status, "Ready turned True with 2 failures of 4")
	assert.Equal(t, "UnexpectedStatus", held.Reason, "the reason is the latest failure's")
	assertReadyStays(t, key, metav1.ConditionFalse, "Ready turned True with 2 failures of 4")

	healed := c.step(t, key) // S F S S: 1 of 4
	up := ready(waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor))
	stamped(t, healed, up, "Ready turned True before the window healed")
	assert.Equal(t, 6, target.Count("/"), "one probe at t0, then one per step")

	require.Eventually(t, func() bool { return strings.Count(eventReasons(t, c.namespace, wc.Name), "ProbeSucceeded") == 1 }, waitFor, poll)
	assert.Equal(t, sortedList("ProbeFailed,ProbeSucceeded"), sortedReasons(t, c.namespace, wc.Name))
}
