package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

func TestRenameOnly(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: webcheckerv1alpha1.ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: 1}
	}
	stored := webcheckerv1alpha1.WebCheckerStatus{
		Shard: "a", ObservedGeneration: 1, HTTPStatusCode: 200,
		Conditions: []metav1.Condition{ready(metav1.ConditionTrue, "ProbeSucceeded", "WebChecker is ready")},
	}
	tests := map[string]struct {
		change func(*webcheckerv1alpha1.WebCheckerStatus)
		want   bool
	}{
		"the shard alone": {func(s *webcheckerv1alpha1.WebCheckerStatus) { s.Shard = "b" }, true},
		"the shard and a detail": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.Shard, s.HTTPStatusCode = "b", 204
		}, true},
		"nothing":        {func(*webcheckerv1alpha1.WebCheckerStatus) {}, false},
		"a detail alone": {func(s *webcheckerv1alpha1.WebCheckerStatus) { s.HTTPStatusCode = 204 }, false},
		"the shard and Ready": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.Shard, s.Conditions[0] = "b", ready(metav1.ConditionFalse, "Timeout", "probe timed out")
		}, false},
		"the shard and the reason": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.Shard, s.Conditions[0].Reason = "b", "Other"
		}, false},
		"the shard and the generation": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.Shard, s.ObservedGeneration, s.Conditions[0].ObservedGeneration = "b", 2, 2
		}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			desired := stored.DeepCopy()
			tc.change(desired)
			assert.Equal(t, tc.want, renameOnly(&stored, desired))
		})
	}
	never := stored.DeepCopy()
	never.Shard = ""
	assert.False(t, renameOnly(never, &stored), "a status no replica wrote is no rename")
}

// TestARenameIsHeldOnceUntilWritten: the first reconcile that finds a
// rename puts it behind the others, the next one writes it, and after a
// write the next rename is held again.
func TestARenameIsHeldOnceUntilWritten(t *testing.T) {
	l := newLedger()
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	assert.True(t, l.holdRename(key, 1), "first found")
	assert.False(t, l.holdRename(key, 1), "found again: written")
	l.wrote(key, 1, "10", time.Unix(1000, 0))
	assert.True(t, l.holdRename(key, 1), "a rename after a write")
	assert.True(t, l.holdRename(key, 2), "a rename of a new generation")
}

// TestRenamesInFlightAreBounded: past maxRenamesInFlight renames being
// written, the next waits renameBusyDelay; a write that is no rename never
// waits, and a rename's turn comes once another is written.
func TestRenamesInFlightAreBounded(t *testing.T) {
	r := &WebCheckerReconciler{}
	ready := metav1.Condition{Type: webcheckerv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded", ObservedGeneration: 1}
	stored := webcheckerv1alpha1.WebCheckerStatus{Shard: "old", ObservedGeneration: 1, Conditions: []metav1.Condition{ready}}
	renamed := *stored.DeepCopy()
	renamed.Shard = "new"
	turn := func(name string, desired *webcheckerv1alpha1.WebCheckerStatus) (func(), time.Duration) {
		return r.renameTurn(types.NamespacedName{Namespace: "ns", Name: name}, 1, &stored, desired)
	}
	var releases []func()
	for i := range maxRenamesInFlight + 1 {
		name := string(rune('a' + i))
		_, later := turn(name, &renamed)
		assert.Equal(t, renameDelay, later, "%s found the first time", name)
		release, later := turn(name, &renamed)
		if i < maxRenamesInFlight {
			assert.Zero(t, later, "%s within the bound", name)
			releases = append(releases, release)
			continue
		}
		assert.Equal(t, renameBusyDelay, later, "%s over the bound", name)
	}
	flipped := *renamed.DeepCopy()
	flipped.Conditions[0].Status, flipped.Conditions[0].Reason = metav1.ConditionFalse, "Timeout"
	_, later := turn("flipped", &flipped)
	assert.Zero(t, later, "a verdict change waited for the renames")
	releases[0]()
	_, later = turn(string(rune('a'+maxRenamesInFlight)), &renamed)
	assert.Zero(t, later, "a rename's turn after another was written")
}
