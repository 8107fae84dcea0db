package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// Suspension: while spec.suspend is true a checker is not scheduled (plan
// leaves it out, so no probe is sent and no per-checker series exported),
// and its owner writes Ready Unknown with reason Suspended, once (see
// desiredStatus).

// EventReasonSuspended (Normal) is recorded when a checker's Ready
// condition turns Suspended.
const EventReasonSuspended = "Suspended"

const suspendedMessage = "Probing is suspended: spec.suspend is true"

// awaitingFirstResult reports whether the status of wc holds no result to
// keep until the first probe: no Ready condition yet, or the one written
// while it was suspended.
func awaitingFirstResult(wc *webcheckerv1alpha1.WebChecker) bool {
	c := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	return c == nil || c.Reason == webcheckerv1alpha1.ReasonSuspended
}
