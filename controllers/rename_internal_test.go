package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
// written, the next waits in the gate without a requeue; a write that is
// no rename never waits, and each rename written hands its turn to the
// oldest waiting one.
func TestRenamesInFlightAreBounded(t *testing.T) {
	r := &WebCheckerReconciler{}
	ready := metav1.Condition{Type: webcheckerv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded", ObservedGeneration: 1}
	stored := webcheckerv1alpha1.WebCheckerStatus{Shard: "old", ObservedGeneration: 1, Conditions: []metav1.Condition{ready}}
	renamed := *stored.DeepCopy()
	renamed.Shard = "new"
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "ns", Name: string(rune('a' + i))}
	}
	turn := func(k types.NamespacedName, desired *webcheckerv1alpha1.WebCheckerStatus) (func(), time.Duration, bool) {
		return r.renameTurn(k, 1, &stored, desired)
	}
	var releases []func()
	for i := range maxRenamesInFlight + 2 {
		_, later, now := turn(key(i), &renamed)
		assert.Equal(t, renameDelay, later, "%s found the first time", key(i))
		assert.False(t, now)
		release, later, now := turn(key(i), &renamed)
		assert.Zero(t, later, "%s found again: no requeue", key(i))
		if i < maxRenamesInFlight {
			assert.True(t, now, "%s within the bound", key(i))
			releases = append(releases, release)
			continue
		}
		assert.False(t, now, "%s over the bound", key(i))
	}
	assert.Empty(t, r.renames.done(types.NamespacedName{}), "no turn to hand on while the renames are written")

	flipped := *renamed.DeepCopy()
	flipped.Conditions[0].Status, flipped.Conditions[0].Reason = metav1.ConditionFalse, "Timeout"
	_, _, now := turn(key(100), &flipped)
	assert.True(t, now, "a verdict change waited for the renames")

	waiting := key(maxRenamesInFlight)
	_, _, now = turn(waiting, &renamed)
	assert.False(t, now, "found once more, it waits in its place")
	releases[0]()
	assert.Equal(t, []types.NamespacedName{waiting}, r.renames.done(types.NamespacedName{}), "the oldest waiting rename is woken")
	next := key(maxRenamesInFlight + 1)
	_, _, now = turn(next, &renamed)
	assert.False(t, now, "a newer rename does not take the woken one's turn")
	release, _, now := turn(waiting, &renamed)
	assert.True(t, now, "the woken rename takes its turn")
	release()
	assert.Equal(t, []types.NamespacedName{next}, r.renames.done(types.NamespacedName{}))

	// The woken checker's reconcile finds nothing to rename (its verdict
	// was written meanwhile): settling hands the turn on.
	last := key(maxRenamesInFlight + 2)
	_, _, _ = turn(last, &renamed)
	_, _, now = turn(last, &renamed)
	require.False(t, now)
	assert.Equal(t, []types.NamespacedName{last}, r.renames.done(next), "an unused turn is handed on")
	assert.Empty(t, r.renames.done(key(0)), "settling a checker that held no turn frees nothing")
}
