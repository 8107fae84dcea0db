package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// Suspension: while spec.suspend is true a checker is not scheduled (plan
// leaves it out, so no probe is sent and no per-checker series exported),
// and its owner writes Ready Unknown with reason Suspended, once.

// EventReasonSuspended (Normal) is recorded when a checker's Ready
// condition turns Suspended.
const EventReasonSuspended = "Suspended"

const suspendedMessage = "Probing is suspended: spec.suspend is true"

// writeSuspended writes Ready Unknown/Suspended to the status of wc, when
// it does not say so already, and records an Event when it did not before.
// The rest of the status (the latest status code, the certificate) stays as
// the last probe left it.
func (r *WebCheckerReconciler) writeSuspended(ctx context.Context, wc *webcheckerv1alpha1.WebChecker) error {
	desired := wc.Status.DeepCopy()
	desired.Shard = r.Ownership.ShardID()
	desired.ObservedGeneration = wc.Generation
	setCondition(&desired.Conditions, metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionReady,
		Status:             metav1.ConditionUnknown,
		Reason:             webcheckerv1alpha1.ReasonSuspended,
		Message:            suspendedMessage,
		ObservedGeneration: wc.Generation,
		LastTransitionTime: metav1.NewTime(r.now()),
	})
	before, err := r.patchStatus(ctx, wc, desired)
	if err != nil || before == nil {
		return err
	}
	if conditionOf(before.Conditions, webcheckerv1alpha1.ConditionReady).Reason != webcheckerv1alpha1.ReasonSuspended {
		r.event(wc, corev1.EventTypeNormal, EventReasonSuspended, "%s", suspendedMessage)
	}
	return nil
}

// awaitingFirstResult reports whether the status of wc holds no result to
// keep until the first probe: no Ready condition yet, or the one written
// while it was suspended.
func awaitingFirstResult(wc *webcheckerv1alpha1.WebChecker) bool {
	c := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	return c == nil || c.Reason == webcheckerv1alpha1.ReasonSuspended
}
