package controllers

import (
	"cmp"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// The conditions of a WebChecker's status, computed from probe outcomes,
// and the Events recorded when they change.

// Event reasons recorded when the Ready condition changes.
const (
	// EventReasonProbeSucceeded (Normal): Ready turned True again after
	// False (a first result that is True records no Event).
	EventReasonProbeSucceeded = "ProbeSucceeded"
	// EventReasonProbeFailed (Warning): Ready turned False.
	EventReasonProbeFailed = "ProbeFailed"
	// EventReasonFailureChanged (Warning): Ready stayed False, but the
	// failure class (its reason) changed, say from DNSFailed to Timeout.
	EventReasonFailureChanged = "ProbeFailureChanged"
)

// Event reasons recorded when the CertificateValid condition changes.
const (
	// EventReasonCertificateExpiringSoon (Warning): the certificate chain
	// started to expire within the warning period.
	EventReasonCertificateExpiringSoon = "CertificateExpiringSoon"
	// EventReasonCertificateExpired (Warning): the certificate chain the
	// server presents has expired (seen only when verification is skipped).
	EventReasonCertificateExpired = "CertificateExpired"
	// EventReasonCertificateRenewed (Normal): a certificate that was
	// expiring or expired is valid beyond the warning period again.
	EventReasonCertificateRenewed = "CertificateRenewed"
)

// EventReasonInvalidSLOObjective (Warning), recorded by the checker's
// owner when it reconciles it: its webcheckerv1alpha1.SLOObjectiveLabel is
// not a number between 0 and 1 exclusive, so its alerts use the default.
const EventReasonInvalidSLOObjective = "InvalidSLOObjective"

// readyCondition turns an outcome into the Ready condition. A server that
// answers as expected is Ready even when its certificate expires soon: that
// is the CertificateValid condition's business.
func readyCondition(o *scheduler.Outcome) metav1.Condition {
	c := metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             string(o.Result.Reason),
		Message:            probing.Truncate(o.Result.Message, maxConditionMessage),
		ObservedGeneration: o.Generation,
		// Used only when the status changes: meta.SetStatusCondition keeps
		// the previous transition time otherwise.
		LastTransitionTime: metav1.NewTime(o.Time),
	}
	if o.Result.Success {
		// The prober's message: ReadyMessage, then the failing addresses
		// when the checker's addresses mode lets some fail.
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, string(probing.ReasonSucceeded), cmp.Or(c.Message, probing.ReadyMessage)
	}
	if c.Reason == "" {
		c.Reason = string(probing.ReasonConnectionFailed)
	}
	return c
}

// nextReady is the Ready condition after the outcome o, the latest of a
// streak of o.Streak probes with its verdict, given the stored condition
// (nil for none) and the thresholds: Ready turns False only after
// thresholds.Failure consecutive failures and True only after
// thresholds.Success consecutive successes; until then the stored
// condition stays, evaluated at o's generation. While its status stays,
// its reason and message follow the latest outcome (a new failure class
// shows at once). Before the first result (no condition, or Unknown) there
// is no state to hold on to and the first outcome decides. A failure
// window, when the thresholds have one, decides instead (see
// nextWindowReady).
func nextReady(stored *metav1.Condition, o *scheduler.Outcome, thresholds scheduler.Thresholds) metav1.Condition {
	if thresholds.Window.Enabled() {
		return nextWindowReady(stored, o, thresholds.Window)
	}
	next := readyCondition(o)
	if stored == nil || stored.Status == metav1.ConditionUnknown || stored.Status == next.Status || o.Reached(thresholds) {
		return next
	}
	kept := *stored
	kept.ObservedGeneration = o.Generation
	return kept
}

// setCondition sets c in conditions as meta.SetStatusCondition does, but
// never moves lastTransitionTime backwards: a transition stamped before
// the stored one (clocks of two replicas differ) takes the stored time.
func setCondition(conditions *[]metav1.Condition, c metav1.Condition) {
	if old := meta.FindStatusCondition(*conditions, c.Type); old != nil && c.LastTransitionTime.Before(&old.LastTransitionTime) {
		c.LastTransitionTime = old.LastTransitionTime
	}
	meta.SetStatusCondition(conditions, c)
}

// certificateCondition turns an outcome of a probe of target into the
// CertificateValid condition: whether the chain the server presented is
// valid for longer than target.CertExpiryWarning(), judged at the time the
// probe finished.
func certificateCondition(o *scheduler.Outcome, target probing.Target) metav1.Condition {
	c := metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionCertificateValid,
		ObservedGeneration: o.Generation,
		LastTransitionTime: metav1.NewTime(o.Time),
	}
	expiry := o.Result.CertificateExpiry
	switch {
	case expiry == nil && !target.UsesTLS():
		c.Status, c.Reason = metav1.ConditionUnknown, webcheckerv1alpha1.ReasonCertificateNotApplicable
		c.Message = "The latest probe used no TLS (plain http, tcp, grpc or dns): there is no certificate"
	case expiry == nil:
		c.Status, c.Reason = metav1.ConditionUnknown, webcheckerv1alpha1.ReasonNoCertificate
		c.Message = "The latest probe received no TLS response; the Ready condition says why"
	case !expiry.After(o.Time):
		c.Status, c.Reason = metav1.ConditionFalse, webcheckerv1alpha1.ReasonCertificateExpired
		c.Message = fmt.Sprintf("The certificate chain expired at %s", expiry.UTC().Format(time.RFC3339))
	case o.Result.Certificate != nil && !o.Result.Certificate.Verified && o.Result.Reason == probing.ReasonTLSError:
		// Verification failed (and not for the validity period): the
		// expiry is the presented chain's.
		c.Status, c.Reason = metav1.ConditionFalse, webcheckerv1alpha1.ReasonCertificateNotVerified
		c.Message = fmt.Sprintf("The certificate chain failed verification (the Ready condition says why); it expires at %s", expiry.UTC().Format(time.RFC3339))
	case o.Result.CertificateWarning != "":
		// The prober's own judgement, with its message naming the
		// certificate.
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, webcheckerv1alpha1.ReasonCertificateExpiringSoon, o.Result.CertificateWarning
	case target.CertExpiryWarning() > 0 && expiry.Sub(o.Time) < target.CertExpiryWarning():
		// The probe failed for another reason, so the prober did not judge
		// the expiry.
		c.Status, c.Reason = metav1.ConditionFalse, webcheckerv1alpha1.ReasonCertificateExpiringSoon
		c.Message = fmt.Sprintf("The certificate chain expires at %s, in less than %s", expiry.UTC().Format(time.RFC3339), target.CertExpiryWarning())
	default:
		c.Status, c.Reason = metav1.ConditionTrue, webcheckerv1alpha1.ReasonCertificateValid
		c.Message = fmt.Sprintf("The certificate chain is valid until %s", expiry.UTC().Format(time.RFC3339))
	}
	c.Message = probing.Truncate(c.Message, maxConditionMessage)
	return c
}

// statusEvents are the Events that a status write changing the
// conditions from before to after records (see readyEvents,
// certificateEvents).
func statusEvents(before, after []metav1.Condition) []statusEvent {
	var events []statusEvent
	if e, ok := readyEvent(conditionOf(before, webcheckerv1alpha1.ConditionReady), conditionOf(after, webcheckerv1alpha1.ConditionReady)); ok {
		events = append(events, e)
	}
	if e, ok := certificateEvent(conditionOf(before, webcheckerv1alpha1.ConditionCertificateValid), conditionOf(after, webcheckerv1alpha1.ConditionCertificateValid)); ok {
		events = append(events, e)
	}
	return events
}

// readyEvent is the Event recorded when the Ready condition changes from
// before to after in its status or its reason: one when it turns False,
// one on every change of failure class while it stays False, one when it
// turns True again after False (a recovery), and one when it turns
// Suspended. A first result that is True records nothing: it changes no
// known state, the condition says it, and 10,000 checkers created at once
// would otherwise queue 10,000 Events in every replica's memory and write
// them to the API server. Nothing is recorded while neither changes (a new
// message of the same failure class included).
func readyEvent(before, after metav1.Condition) (statusEvent, bool) {
	if before.Status == after.Status && before.Reason == after.Reason {
		return statusEvent{}, false
	}
	switch after.Status {
	case metav1.ConditionTrue:
		if before.Status == metav1.ConditionFalse {
			return statusEvent{corev1.EventTypeNormal, EventReasonProbeSucceeded, after.Message}, true
		}
	case metav1.ConditionFalse:
		if before.Status == metav1.ConditionFalse {
			return statusEvent{corev1.EventTypeWarning, EventReasonFailureChanged,
				fmt.Sprintf("%s (was %s): %s", after.Reason, before.Reason, after.Message)}, true
		}
		return statusEvent{corev1.EventTypeWarning, EventReasonProbeFailed, fmt.Sprintf("%s: %s", after.Reason, after.Message)}, true
	case metav1.ConditionUnknown:
		if after.Reason == webcheckerv1alpha1.ReasonSuspended {
			return statusEvent{corev1.EventTypeNormal, EventReasonSuspended, after.Message}, true
		}
	}
	return statusEvent{}, false
}

// certificateEvent is the Event recorded when the CertificateValid
// condition changes its reason from before to after: a Warning when the
// chain starts to expire soon or has expired, a Normal one when it is
// valid again after either. Changes to and from Unknown (no certificate
// seen) record nothing: the Ready condition tells that story.
func certificateEvent(before, after metav1.Condition) (statusEvent, bool) {
	if before.Reason == after.Reason {
		return statusEvent{}, false
	}
	switch after.Reason {
	case webcheckerv1alpha1.ReasonCertificateExpiringSoon:
		return statusEvent{corev1.EventTypeWarning, EventReasonCertificateExpiringSoon, after.Message}, true
	case webcheckerv1alpha1.ReasonCertificateExpired:
		return statusEvent{corev1.EventTypeWarning, EventReasonCertificateExpired, after.Message}, true
	case webcheckerv1alpha1.ReasonCertificateValid:
		if before.Status == metav1.ConditionFalse {
			return statusEvent{corev1.EventTypeNormal, EventReasonCertificateRenewed, after.Message}, true
		}
	}
	return statusEvent{}, false
}

// event records an Event about wc whose note, format applied to args, is
// bounded to what the API accepts. An Event over the share of wc's
// namespace (Limits.EventInterval) is dropped: the conditions hold the
// state, and the broadcaster's queue stays free for the other namespaces.
func (r *WebCheckerReconciler) event(wc *webcheckerv1alpha1.WebChecker, eventType, reason, format string, args ...any) {
	if !r.fairness().eventAllowed(wc.Namespace, r.now()) {
		return
	}
	r.Recorder.Eventf(wc, nil, eventType, reason, "Probe", "%s", probing.Truncate(fmt.Sprintf(format, args...), maxEventNote))
}

// conditionOf returns a copy of the condition of type t in conditions, or
// the zero condition when there is none.
func conditionOf(conditions []metav1.Condition, t string) metav1.Condition {
	if c := meta.FindStatusCondition(conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func readyStatus(conditions []metav1.Condition) metav1.ConditionStatus {
	return conditionOf(conditions, webcheckerv1alpha1.ConditionReady).Status
}
