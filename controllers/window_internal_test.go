package controllers

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// windowOutcome is the outcome of the last of the probes verdicts (oldest
// first, S a success, F a failure with the result failed), with the
// failure window's record of them, as the scheduler keeps it.
func windowOutcome(verdicts string, failed probing.Result) *scheduler.Outcome {
	var r scheduler.Recent
	res := answered
	for _, v := range verdicts {
		r.Failed <<= 1
		r.Len = min(r.Len+1, scheduler.MaxWindow)
		res = answered
		if v == 'F' {
			res = failed
			r.Failed |= 1
			r.FailureReason, r.FailureMessage = failed.Reason, failed.Message
		}
	}
	return &scheduler.Outcome{Generation: 2, Result: res, Time: probed, Recent: r}
}

func TestNextWindowReady(t *testing.T) {
	th := scheduler.Thresholds{Failure: 1, Success: 1, Window: scheduler.Window{Failures: 2, Probes: 6}}
	unavailable := probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503}
	tests := map[string]struct {
		stored      *metav1.Condition
		verdicts    string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string // "" for the stored one, kept
		wantMoved   bool   // lastTransitionTime is the probe's
	}{
		"first result decides, failed": {nil, "F", metav1.ConditionFalse, "UnexpectedStatus", "the last probe failed: status 503", true},
		"pending: first success":       {readyWas(metav1.ConditionUnknown, "Pending"), "S", metav1.ConditionTrue, "ProbeSucceeded", probing.ReadyMessage, true},
		"True, 1 of 6 failed":          {readyWas(metav1.ConditionTrue, "ProbeSucceeded"), "SSSSSF", metav1.ConditionTrue, "ProbeSucceeded", probing.ReadyMessage, false},
		"True, one in three failed": {readyWas(metav1.ConditionTrue, "ProbeSucceeded"), "SSFSSF", metav1.ConditionFalse, "UnexpectedStatus",
			"2 of the last 6 probes failed (latest: status 503)", true},
		"False, latest succeeded": {readyWas(metav1.ConditionFalse, "UnexpectedStatus"), "SFSSFS", metav1.ConditionFalse, "UnexpectedStatus",
			"2 of the last 6 probes failed (latest: status 503)", false},
		"False, 4 of 6 succeeded": {readyWas(metav1.ConditionFalse, "UnexpectedStatus"), "FFFFFFSSSS", metav1.ConditionFalse, "UnexpectedStatus",
			"2 of the last 6 probes failed (latest: status 503)", false},
		"False, 5 of 6 succeeded: healthy": {readyWas(metav1.ConditionFalse, "UnexpectedStatus"), "FFFFFFSSSSS", metav1.ConditionTrue, "ProbeSucceeded", probing.ReadyMessage, true},
		"taken over True, 1 failure since": {readyWas(metav1.ConditionTrue, "ProbeSucceeded"), "F", metav1.ConditionTrue, "ProbeSucceeded", "", false},
		"taken over False, 3 successes":    {readyWas(metav1.ConditionFalse, "Timeout"), "SSS", metav1.ConditionFalse, "Timeout", "", false},
		"taken over False, 2 failures":     {readyWas(metav1.ConditionFalse, "Timeout"), "FSF", metav1.ConditionFalse, "UnexpectedStatus", "2 of the last 3 probes failed (latest: status 503)", false},
		"taken over True, 2 failures":      {readyWas(metav1.ConditionTrue, "ProbeSucceeded"), "FF", metav1.ConditionFalse, "UnexpectedStatus", "2 of the last 2 probes failed (latest: status 503)", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := windowOutcome(tc.verdicts, unavailable)
			var conditions []metav1.Condition
			if tc.stored != nil {
				conditions = append(conditions, *tc.stored)
			}
			setCondition(&conditions, nextReady(tc.stored, o, th))
			got := conditions[0]
			assert.Equal(t, tc.wantStatus, got.Status)
			assert.Equal(t, tc.wantReason, got.Reason)
			want := tc.wantMessage
			if want == "" {
				want = tc.stored.Message
			}
			assert.Equal(t, want, got.Message)
			assert.EqualValues(t, 2, got.ObservedGeneration, "the condition is evaluated at the probe's generation")
			if tc.wantMoved {
				assert.Equal(t, probed, got.LastTransitionTime.Time)
			} else if tc.stored != nil {
				assert.Equal(t, t0, got.LastTransitionTime.Time)
			}
		})
	}
}

// TestWindowMessageIsBounded: a failure message as long as a probe may
// return still gives a condition message within the API's bound.
func TestWindowMessageIsBounded(t *testing.T) {
	long := probing.Result{Reason: probing.ReasonTimeout, Message: strings.Repeat("é", probing.MaxMessageBytes)}
	c := windowDown(windowOutcome(strings.Repeat("F", 64), long), scheduler.Window{Failures: 64, Probes: 64})
	assert.LessOrEqual(t, len(c.Message), maxConditionMessage)
	assert.True(t, strings.HasPrefix(c.Message, "64 of the last 64 probes failed (latest: é"), c.Message[:60])
}

// TestVantagePointEntryFollowsTheWindow: with several vantage points each
// one's entry is judged by its own failure window, as Ready is with one.
func TestVantagePointEntryFollowsTheWindow(t *testing.T) {
	th := scheduler.Thresholds{Failure: 1, Success: 1, Window: scheduler.Window{Failures: 2, Probes: 6}}
	unavailable := probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503}
	stored := nextEntry(nil, windowOutcome("S", unavailable), th, "replica-a", "zone-a")
	assert.Equal(t, metav1.ConditionTrue, stored.Ready)

	held := nextEntry(&stored, windowOutcome("SSFSS", unavailable), th, "replica-a", "zone-a")
	assert.Equal(t, metav1.ConditionTrue, held.Ready, "1 of 5 failed")

	down := nextEntry(&held, windowOutcome("SSFSSF", unavailable), th, "replica-a", "zone-a")
	assert.Equal(t, metav1.ConditionFalse, down.Ready)
	assert.Equal(t, "UnexpectedStatus", down.Reason)
	assert.Equal(t, "2 of the last 6 probes failed (latest: status 503)", down.Message)
	assert.Equal(t, probed, down.LastTransitionTime.Time)
}
