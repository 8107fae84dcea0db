package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// The Reconciling condition: the kstatus signal (InProgress) that a
// checker has no result of its current generation yet. It changes only in
// writes that happen anyway (Pending, the first result, a quorum update):
// never a write of its own, never one per probe.

const reconcilingMessage = "Waiting for a probe result of the current generation"

// setReconciling sets the Reconciling condition of s, the status that v's
// owner writes, True while it holds no result of the checker's current
// generation (see awaitingResult), and removes it otherwise.
func (v statusView) setReconciling(s *webcheckerv1alpha1.WebCheckerStatus) {
	if !v.awaitingResult(s) {
		meta.RemoveStatusCondition(&s.Conditions, webcheckerv1alpha1.ConditionReconciling)
		return
	}
	setCondition(&s.Conditions, reconcilingCondition(v.wc.Generation, v.now))
}

// awaitingResult reports whether s, the status that v's owner writes,
// holds no result of the current generation although its
// observedGeneration says it describes it: its Ready condition is Pending,
// or, with several vantage points, no majority of the entries of this
// generation has decided and the Ready condition kept was not decided at
// this generation either. A suspended checker is decided (not probed, as
// asked). With one vantage point the status keeps the observedGeneration
// of its latest result until the next one, which says "in progress" on
// its own: no condition, and no write, is needed for that.
func (v statusView) awaitingResult(s *webcheckerv1alpha1.WebCheckerStatus) bool {
	ready := meta.FindStatusCondition(s.Conditions, webcheckerv1alpha1.ConditionReady)
	switch {
	case v.p.suspended || ready == nil:
		return false
	case ready.Reason == webcheckerv1alpha1.ReasonPending:
		return true
	case v.p.vantage == nil:
		return false
	}
	gen := v.wc.Generation
	if countQuorum(v.wc.Status.VantagePoints, v.p.vantage, v.p.vantagePoints, gen).decided() {
		return false
	}
	stored := meta.FindStatusCondition(v.wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	if stored == nil || stored.ObservedGeneration != gen {
		return true
	}
	// Kept at this generation already: awaiting still if it was then.
	was := meta.FindStatusCondition(v.wc.Status.Conditions, webcheckerv1alpha1.ConditionReconciling)
	return was != nil && was.Status == metav1.ConditionTrue && was.ObservedGeneration == gen
}

// decided reports whether a majority of q's vantage points agree, True or
// False, as quorum.ready requires to decide the Ready condition.
func (q quorum) decided() bool {
	majority := q.size/2 + 1
	return q.size > 0 && (len(q.up) >= majority || len(q.down) >= majority)
}

// reconcilingCondition is the Reconciling condition of a checker awaiting
// a result of generation, stamped now.
func reconcilingCondition(generation int64, now time.Time) metav1.Condition {
	return metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionReconciling,
		Status:             metav1.ConditionTrue,
		Reason:             webcheckerv1alpha1.ReasonAwaitingResult,
		Message:            reconcilingMessage,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	}
}
