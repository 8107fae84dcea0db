package controllers

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// viewed is a checker at generation 2 whose stored status has the given
// conditions (and shard), with a plan of this replica ("me") that owns and
// probes it, failureThreshold 3 and successThreshold 2, over https.
func viewed(shard string, conditions ...metav1.Condition) statusView {
	wc := &webcheckerv1alpha1.WebChecker{}
	wc.Namespace, wc.Name, wc.Generation = "ns", "wc", 2
	wc.Status.Shard, wc.Status.Conditions = shard, conditions
	check := &scheduler.Check{
		Generation: 2, Interval: 10 * time.Second,
		Thresholds: scheduler.Thresholds{Failure: 3, Success: 2},
		Target: mustTarget(probing.TargetSpec{URL: "https://example.test/", Method: http.MethodGet, Timeout: time.Second,
			CertExpiryWarning: 14 * 24 * time.Hour}),
	}
	return statusView{wc: wc, p: plan{check: check, owned: true, probes: true, vantagePoints: 1}, shard: "me", now: probed}
}

// with is v with its latest outcome: result, the streak-th of its verdict.
func (v statusView) with(result probing.Result, streak int) statusView {
	v.latest = &scheduler.Outcome{Generation: 2, Result: result, Time: probed, Streak: streak}
	return v
}

func readyOf(status metav1.ConditionStatus, reason string) metav1.Condition {
	return *readyWas(status, reason)
}

func certificateOf(reason string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: webcheckerv1alpha1.ConditionCertificateValid, Status: status, Reason: reason, Message: "before",
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(t0)}
}

// TestDesiredStatus: the status and the Events that one computation
// gives, on every path, from the stored status, the plan and the latest
// outcome with its streak.
func TestDesiredStatus(t *testing.T) {
	valid := valid()
	soon := probed.Add(24 * time.Hour)
	expiringSoon := withExpiry(expiring, &soon)
	suspended := viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded"))
	suspended.p = plan{owned: true, probes: true, suspended: true}
	stillSuspended := viewed("me", readyOf(metav1.ConditionUnknown, webcheckerv1alpha1.ReasonSuspended))
	stillSuspended.p = suspended.p
	notProbed := viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded"))
	notProbed.p.check = nil
	notProbed = notProbed.with(probing.Result{Reason: "SecretNotFound", Message: `Secret "creds" not found`}, 1)

	tests := map[string]struct {
		view statusView
		// ready is the Ready condition's status and reason; "" for none.
		ready, reason string
		// moved: its lastTransitionTime is the view's (the probe's).
		moved   bool
		pending bool
		shard   string
		events  []string // reasons
	}{
		"a first success decides, quietly": {
			view: viewed("").with(valid, 1), ready: "True", reason: "ProbeSucceeded", moved: true, shard: "me",
		},
		"a first failure decides, loudly": {
			view: viewed("").with(timedOut, 1), ready: "False", reason: "Timeout", moved: true, shard: "me",
			events: []string{EventReasonProbeFailed},
		},
		"no outcome and no result: Pending": {
			view: viewed(""), ready: "Unknown", reason: webcheckerv1alpha1.ReasonPending, moved: true, pending: true, shard: "me",
		},
		"no outcome after a take-over: the stored result stays": {
			view: viewed("them", readyOf(metav1.ConditionTrue, "ProbeSucceeded")), ready: "True", reason: "ProbeSucceeded", shard: "them",
		},
		"True, 2 of 3 failures: kept": {
			view: viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded")).with(timedOut, 2), ready: "True", reason: "ProbeSucceeded", shard: "me",
		},
		"True, 3 of 3 failures: False": {
			view: viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded")).with(timedOut, 3), ready: "False", reason: "Timeout", moved: true, shard: "me",
			events: []string{EventReasonProbeFailed},
		},
		"False, another failure class": {
			view: viewed("me", readyOf(metav1.ConditionFalse, "Timeout")).with(refused, 1), ready: "False", reason: "ConnectionFailed", shard: "me",
			events: []string{EventReasonFailureChanged},
		},
		"False, 1 of 2 successes: kept": {
			view: viewed("me", readyOf(metav1.ConditionFalse, "Timeout")).with(valid, 1), ready: "False", reason: "Timeout", shard: "me",
		},
		"False, 2 of 2 successes: recovered": {
			view: viewed("me", readyOf(metav1.ConditionFalse, "Timeout")).with(valid, 2), ready: "True", reason: "ProbeSucceeded", moved: true, shard: "me",
			events: []string{EventReasonProbeSucceeded},
		},
		"a certificate starts to expire soon": {
			view: viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded"),
				certificateOf(webcheckerv1alpha1.ReasonCertificateValid, metav1.ConditionTrue)).with(expiringSoon, 5),
			ready: "True", reason: "ProbeSucceeded", shard: "me",
			events: []string{EventReasonCertificateExpiringSoon},
		},
		"a certificate renewed": {
			view: viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded"),
				certificateOf(webcheckerv1alpha1.ReasonCertificateExpiringSoon, metav1.ConditionFalse)).with(valid, 5),
			ready: "True", reason: "ProbeSucceeded", shard: "me",
			events: []string{EventReasonCertificateRenewed},
		},
		"cannot be probed: decided at once": {
			view: notProbed, ready: "False", reason: "SecretNotFound", moved: true, shard: "me",
			events: []string{EventReasonProbeFailed},
		},
		"suspended": {
			view: suspended, ready: "Unknown", reason: webcheckerv1alpha1.ReasonSuspended, moved: true, shard: "me",
			events: []string{EventReasonSuspended},
		},
		"still suspended: no Event": {
			view: stillSuspended, ready: "Unknown", reason: webcheckerv1alpha1.ReasonSuspended, shard: "me",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := desiredStatus(tc.view)
			c := meta.FindStatusCondition(u.status.Conditions, webcheckerv1alpha1.ConditionReady)
			require.NotNil(t, c, "no Ready condition")
			assert.Equal(t, tc.ready, string(c.Status))
			assert.Equal(t, tc.reason, c.Reason)
			if tc.moved {
				assert.Equal(t, probed, c.LastTransitionTime.Time, "lastTransitionTime")
			} else {
				assert.Equal(t, t0, c.LastTransitionTime.Time, "lastTransitionTime")
			}
			assert.Equal(t, tc.pending, u.pending, "pending")
			assert.Equal(t, tc.shard, u.status.Shard)
			var reasons []string
			for _, e := range u.events {
				reasons = append(reasons, e.reason)
			}
			assert.Equal(t, tc.events, reasons, "events")
			assert.Nil(t, u.status.VantagePoints)
		})
	}
}

// TestDesiredStatusLeavesTheStoredOneAlone: the computation works on a
// copy; the checker it was given is unchanged.
func TestDesiredStatusLeavesTheStoredOneAlone(t *testing.T) {
	v := viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded")).with(timedOut, 3)
	before := v.wc.DeepCopy()
	u := desiredStatus(v)
	assert.Equal(t, before, v.wc)
	assert.NotEqual(t, before.Status, u.status)
}

// TestDesiredStatusWithSeveralVantagePoints: the owner's status comes from
// the majority of the entries, drops those of replicas that left, and
// says how many vantage points have not reported; with no majority and
// nothing stored it is Pending; with one vantage point again, nothing of
// quorum probing stays.
func TestDesiredStatusWithSeveralVantagePoints(t *testing.T) {
	set := []VantagePoint{{Shard: "me", Zone: "zone-a"}, {Shard: "b", Zone: "zone-b"}, {Shard: "c", Zone: "zone-c"}}
	quorumOf := func(entries ...webcheckerv1alpha1.VantagePointStatus) statusView {
		v := viewed("me")
		v.p.vantage, v.p.vantagePoints = set, 3
		v.wc.Status.VantagePoints = entries
		return v
	}

	u := desiredStatus(quorumOf(entry("me", "True", "ProbeSucceeded", 2), entry("b", "True", "ProbeSucceeded", 2),
		entry("gone", "False", "Timeout", 2)))
	ready := meta.FindStatusCondition(u.status.Conditions, webcheckerv1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, "2/3", u.status.Quorum)
	assert.Equal(t, 1, u.unreported)
	assert.False(t, u.pending)
	assert.Len(t, u.status.VantagePoints, 2, "the entry of a replica that left was kept")
	assert.True(t, meta.IsStatusConditionTrue(u.status.Conditions, ConditionVantagePointsAvailable))

	u = desiredStatus(quorumOf())
	assert.True(t, u.pending)
	assert.Equal(t, 3, u.unreported)
	assert.Equal(t, webcheckerv1alpha1.ReasonPending, meta.FindStatusCondition(u.status.Conditions, webcheckerv1alpha1.ConditionReady).Reason)

	single := viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded"),
		metav1.Condition{Type: ConditionVantagePointsAvailable, Status: metav1.ConditionTrue, Reason: ReasonVantagePointsAvailable})
	single.wc.Status.Quorum = "3/3"
	single.wc.Status.VantagePoints = []webcheckerv1alpha1.VantagePointStatus{entry("me", "True", "ProbeSucceeded", 2)}
	u = desiredStatus(single.with(valid(), 1))
	assert.Empty(t, u.status.Quorum)
	assert.Nil(t, u.status.VantagePoints)
	assert.Nil(t, meta.FindStatusCondition(u.status.Conditions, ConditionVantagePointsAvailable))
}

// valid is a success whose certificate is valid for a month.
func valid() probing.Result {
	r := answered
	later := probed.Add(30 * 24 * time.Hour)
	r.CertificateExpiry = &later
	return r
}
