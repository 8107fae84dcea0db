package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

func TestNamespaceBucketsShareByNamespace(t *testing.T) {
	b := newNamespaceBuckets(2, 3) // 2/s, burst 3
	now := time.Unix(1000, 0)
	for i := range 3 {
		require.Zero(t, b.take("noisy", now, 0), "write %d of the burst", i)
	}
	assert.Equal(t, 500*time.Millisecond, b.take("noisy", now, 0), "over the burst: wait for the next token")
	assert.Equal(t, 500*time.Millisecond, b.take("noisy", now, 0), "a refused take takes no token")
	assert.Zero(t, b.take("quiet", now, 0), "another namespace has a bucket of its own")
	assert.Zero(t, b.take("noisy", now.Add(500*time.Millisecond), 0), "refilled at the rate")
}

// TestRenamesLeaveAWriteForVerdicts: a write that only renames
// status.shard takes a token only if one is left after it, so a verdict
// that comes behind a hand-over's renames writes at once; with a burst of
// one it is not starved.
func TestRenamesLeaveAWriteForVerdicts(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newNamespaceBuckets(2, 3) // 2/s, burst 3
	require.Zero(t, b.take("ns", now, 1), "rename 1")
	require.Zero(t, b.take("ns", now, 1), "rename 2")
	assert.Equal(t, 500*time.Millisecond, b.take("ns", now, 1), "a third rename would leave no write: wait for a token")
	assert.Zero(t, b.take("ns", now, 0), "the verdict takes the token the renames left")
	assert.Equal(t, 500*time.Millisecond, b.take("ns", now, 0), "then the bucket is empty")

	single := newNamespaceBuckets(2, 1)
	assert.Zero(t, single.take("ns", now, 1), "a burst of one holds no write to spare: the rename goes")
}

func TestNamespaceBucketsForgetFullBuckets(t *testing.T) {
	b := newNamespaceBuckets(1, 1)
	now := time.Unix(1000, 0)
	for i := range 10 * minSweep {
		// Each namespace writes once; a second later its bucket is full.
		b.take(fmt.Sprintf("ns-%d", i), now.Add(time.Duration(i)*time.Second), 0)
	}
	assert.LessOrEqual(t, len(b.buckets), minSweep+1, "buckets of namespaces idle for a refill were kept")
}

// TestNamespaceSlots: a namespace holds its share of the reconcile
// workers, borrows the idle ones but the last as many, and a reconcile
// refused waits in its namespace's line, without a requeue, until a slot
// frees: then the slot is reserved for the oldest in line, which is woken
// once and takes it when its reconcile runs.
func TestNamespaceSlots(t *testing.T) {
	f := newFairness(NamespaceLimits{ReconcileShare: 0.25}, 8) // 2 of 8
	in := func(ns string, i int) types.NamespacedName {
		return types.NamespacedName{Namespace: ns, Name: fmt.Sprint(i)}
	}
	var noisy []func()
	for i := 0; ; i++ {
		release, ok := f.enter(in("noisy", i))
		if !ok {
			break
		}
		noisy = append(noisy, release)
	}
	assert.Len(t, noisy, 6, "alone, a namespace borrows every idle worker but the last 2")
	var quiet []func()
	for i := range 2 {
		release, ok := f.enter(in("quiet", i))
		require.True(t, ok, "a namespace within its share waits for none over it")
		quiet = append(quiet, release)
	}
	_, ok := f.enter(in("quiet", 2))
	assert.False(t, ok, "beyond its share, with no idle worker to borrow")
	_, ok = f.enter(in("noisy", 7))
	assert.False(t, ok, "in line behind noisy/6")
	assert.Empty(t, f.woken(), "nothing freed: nobody woken")

	noisy[0]()
	assert.Empty(t, f.woken(), "over its share, the noisy namespace leaves a freed worker to the others")
	release, ok := f.enter(in("other", 0))
	assert.True(t, ok, "within its share, another namespace takes the freed worker")
	release()
	assert.Empty(t, f.woken(), "the lines wait for a worker within their namespace's share, or to borrow")

	quiet[0]()
	assert.Equal(t, []types.NamespacedName{in("quiet", 2)}, f.woken(), "a slot of quiet's share goes to quiet's line")
	_, ok = f.enter(in("noisy", 8))
	assert.False(t, ok, "the slot is reserved: others wait")
	quiet2, ok := f.enter(in("quiet", 2))
	require.True(t, ok, "the woken checker takes its reserved slot")

	noisy[1]()
	noisy[2]()
	assert.Equal(t, []types.NamespacedName{in("noisy", 6)}, f.woken(), "below the borrowing bound, the oldest in noisy's line borrows; noisy/7 and noisy/8 wait")
	_, ok = f.enter(in("noisy", 6))
	require.True(t, ok)
	assert.Equal(t, 6, f.slots.total, "5 running and 1 reserved for the line")

	for _, release := range append(noisy[3:], quiet[1], quiet2) {
		release()
	}
	assert.ElementsMatch(t, []types.NamespacedName{in("noisy", 7), in("noisy", 8)}, f.woken(), "the rest of the line, once workers are idle")
	assert.Empty(t, f.slots.lines, "no line left")
	assert.Empty(t, f.slots.order)

	unbounded := newFairness(NamespaceLimits{}, 8)
	for i := range 100 {
		_, ok := unbounded.enter(in("noisy", i))
		require.True(t, ok)
	}
	assert.Empty(t, unbounded.woken())
}

// TestNamespaceLinesBorrowInTurn: workers freed below the borrowing bound
// go to the namespaces in line one checker each, in turn, not all to the
// namespace whose line is longest.
func TestNamespaceLinesBorrowInTurn(t *testing.T) {
	s := newNamespaceSlots(1, 4) // a share of 1 of 5 workers
	key := func(ns string, i int) types.NamespacedName {
		return types.NamespacedName{Namespace: ns, Name: fmt.Sprint(i)}
	}
	var running []func()
	for i := range 6 {
		release, ok := s.enter(key("a", i))
		require.Equal(t, i < 4, ok, "a/%d: its share, then borrowing 3 idle workers", i)
		running = append(running, release)
	}
	for i := range 3 {
		release, ok := s.enter(key("b", i))
		require.Equal(t, i == 0, ok, "b/%d: its share", i)
		running = append(running, release)
	}
	running[1]() // 4 left: none to borrow
	assert.Empty(t, s.woken())
	running[2]()
	running[3]()
	assert.Equal(t, []types.NamespacedName{key("a", 4), key("b", 1)}, s.woken(), "one of each line in turn")
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
				if f.writeWait("quiet", now, false) == 0 {
					quiet++
				} else {
					quietWaited++
				}
			}
			// The noisy namespace writes whenever it may.
			if f.writeWait("noisy", now, false) == 0 {
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
