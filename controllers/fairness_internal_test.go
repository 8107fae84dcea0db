package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

func TestNamespaceBucketsShareByNamespace(t *testing.T) {
	b := newNamespaceBuckets(2, 3) // 2/s, burst 3
	now := time.Unix(1000, 0)
	for i := range 3 {
		require.Zero(t, b.take("noisy", now), "write %d of the burst", i)
	}
	assert.Equal(t, 500*time.Millisecond, b.take("noisy", now), "over the burst: wait for the next token")
	assert.Equal(t, 500*time.Millisecond, b.take("noisy", now), "a refused take takes no token")
	assert.Zero(t, b.take("quiet", now), "another namespace has a bucket of its own")
	assert.Zero(t, b.take("noisy", now.Add(500*time.Millisecond)), "refilled at the rate")
}

func TestNamespaceBucketsForgetFullBuckets(t *testing.T) {
	b := newNamespaceBuckets(1, 1)
	now := time.Unix(1000, 0)
	for i := range 10 * minSweep {
		// Each namespace writes once; a second later its bucket is full.
		b.take(fmt.Sprintf("ns-%d", i), now.Add(time.Duration(i)*time.Second))
	}
	assert.LessOrEqual(t, len(b.buckets), minSweep+1, "buckets of namespaces idle for a refill were kept")
}

func TestNamespaceSlots(t *testing.T) {
	f := newFairness(NamespaceLimits{ReconcileShare: 0.25}, 8) // 2 of 8
	var noisy []func()
	for {
		release, ok := f.enter("noisy")
		if !ok {
			break
		}
		noisy = append(noisy, release)
	}
	assert.Len(t, noisy, 6, "alone, a namespace borrows every idle worker but the last 2")
	var quiet []func()
	for range 2 {
		release, ok := f.enter("quiet")
		require.True(t, ok, "a namespace within its share waits for none over it")
		quiet = append(quiet, release)
	}
	_, ok := f.enter("quiet")
	assert.False(t, ok, "beyond its share, with no idle worker to borrow")
	noisy[0]()
	_, ok = f.enter("noisy")
	assert.False(t, ok, "over its share, the noisy namespace leaves a freed worker to the others")
	release, ok := f.enter("other")
	assert.True(t, ok, "within its share, another namespace takes the freed worker")
	release()
	for _, release := range append(noisy[1:], quiet...) {
		release()
	}
	assert.Zero(t, f.slots.total)
	assert.Empty(t, f.slots.held)

	unbounded := newFairness(NamespaceLimits{}, 8)
	for range 100 {
		_, ok := unbounded.enter("noisy")
		require.True(t, ok)
	}
}

func TestDetailOnly(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: webcheckerv1alpha1.ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: 1}
	}
	stored := webcheckerv1alpha1.WebCheckerStatus{
		Shard: "a", ObservedGeneration: 1, HTTPStatusCode: 500,
		Conditions: []metav1.Condition{ready(metav1.ConditionFalse, "UnexpectedStatus", "unexpected status code 500")},
	}
	tests := map[string]struct {
		change func(*webcheckerv1alpha1.WebCheckerStatus)
		want   bool
	}{
		"message and status code": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.HTTPStatusCode, s.Conditions[0].Message = 502, "unexpected status code 502"
		}, true},
		"reason": {func(s *webcheckerv1alpha1.WebCheckerStatus) { s.Conditions[0].Reason = "Timeout" }, false},
		"status": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.Conditions[0] = ready(metav1.ConditionTrue, "ProbeSucceeded", "WebChecker is ready")
		}, false},
		"generation": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.ObservedGeneration, s.Conditions[0].ObservedGeneration = 2, 2
		}, false},
		"shard": {func(s *webcheckerv1alpha1.WebCheckerStatus) { s.Shard = "b" }, false},
		"a new condition": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: webcheckerv1alpha1.ConditionCertificateValid, Status: metav1.ConditionUnknown, Reason: "NoCertificate"})
		}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			desired := stored.DeepCopy()
			tc.change(desired)
			assert.Equal(t, tc.want, detailOnly(&stored, desired))
		})
	}
	assert.False(t, detailOnly(&webcheckerv1alpha1.WebCheckerStatus{}, stored.DeepCopy()), "a first Ready condition is no detail")
}

func TestEventsOverTheNamespaceShareAreDropped(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	rec := events.NewFakeRecorder(100)
	r := &WebCheckerReconciler{Recorder: rec, Clock: clk, Limits: NamespaceLimits{EventInterval: 10 * time.Second, EventBurst: 3}}
	noisy := &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: "noisy", Name: "a"}}
	quiet := &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: "quiet", Name: "a"}}
	for range 10 {
		r.event(noisy, corev1.EventTypeWarning, EventReasonProbeFailed, "failed")
	}
	r.event(quiet, corev1.EventTypeWarning, EventReasonProbeFailed, "failed")
	assert.Len(t, rec.Events, 4, "the noisy namespace's burst and the quiet one's Event")
	clk.Step(10 * time.Second)
	r.event(noisy, corev1.EventTypeWarning, EventReasonProbeFailed, "failed")
	r.event(noisy, corev1.EventTypeWarning, EventReasonProbeFailed, "failed")
	assert.Len(t, rec.Events, 5, "one more per interval")
}

// TestOverShareWritesBorrowOnlyWhatOthersLeave: a namespace alone writes at
// the replica's whole budget; beside it, a namespace within its share
// never waits, because the one over its share never takes the reserve.
func TestOverShareWritesBorrowOnlyWhatOthersLeave(t *testing.T) {
	limits := NamespaceLimits{StatusWriteRate: 2.5, StatusWriteBurst: 3, APIRate: 10, APIBurst: 10}
	tick := 10 * time.Millisecond
	run := func(f *fairness, quietEvery time.Duration, d time.Duration) (noisy, quiet, quietWaited int) {
		start := time.Unix(1000, 0)
		nextQuiet := start
		for now := start; now.Before(start.Add(d)); now = now.Add(tick) {
			if quietEvery > 0 && !now.Before(nextQuiet) {
				nextQuiet = nextQuiet.Add(quietEvery)
				if f.writeWait("quiet", now) == 0 {
					quiet++
				} else {
					quietWaited++
				}
			}
			// The noisy namespace writes whenever it may.
			if f.writeWait("noisy", now) == 0 {
				noisy++
			}
		}
		return noisy, quiet, quietWaited
	}
	noisy, _, _ := run(newFairness(limits, 8), 0, time.Minute)
	assert.InDelta(t, 10*60, noisy, 10+1, "alone, a namespace writes at the whole budget")

	noisy, quiet, waited := run(newFairness(limits, 8), time.Second, time.Minute)
	assert.Zero(t, waited, "a write within its share waited for the namespace over it")
	assert.Equal(t, 60, quiet)
	assert.InDelta(t, 9*60, noisy, 10+1, "the noisy namespace gets what the quiet one leaves")

	hard := limits
	hard.APIRate, hard.APIBurst = 0, 0
	noisy, _, _ = run(newFairness(hard, 8), 0, time.Minute)
	assert.InDelta(t, 2.5*60, noisy, 3+1, "without a budget to borrow from, a namespace is held to its share")
}
