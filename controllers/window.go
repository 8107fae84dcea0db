package controllers

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// nextWindowReady is the Ready condition after the outcome o of a checker
// judged by the failure window w (spec.failureWindow), given the stored
// condition (nil for none): False once w.Failures of its last w.Probes
// probes failed, True once the window is healthy (fewer than w.Failures
// of them can have failed: see scheduler.Window), and the stored
// condition, evaluated at o's generation, while the window is undecided:
// after a change of the spec or a hand-over, until this replica's own
// probes decide. Before the first result (no condition, or Unknown) the
// first outcome decides, as with thresholds. While False, the reason is
// that of the latest failed probe and the message counts the failures,
// such as "2 of the last 6 probes failed (latest: status 503)".
func nextWindowReady(stored *metav1.Condition, o *scheduler.Outcome, w scheduler.Window) metav1.Condition {
	verdict := w.Judge(o.Recent)
	if verdict == scheduler.Undecided && (stored == nil || stored.Status == metav1.ConditionUnknown) {
		verdict = scheduler.Up
		if !o.Result.Success {
			verdict = scheduler.Down
		}
	}
	switch verdict {
	case scheduler.Up:
		return metav1.Condition{
			Type:               webcheckerv1alpha1.ConditionReady,
			Status:             metav1.ConditionTrue,
			Reason:             string(probing.ReasonSucceeded),
			Message:            probing.ReadyMessage,
			ObservedGeneration: o.Generation,
			LastTransitionTime: metav1.NewTime(o.Time),
		}
	case scheduler.Down:
		return windowDown(o, w)
	}
	kept := *stored
	kept.ObservedGeneration = o.Generation
	return kept
}

// windowDown is the Ready condition False of a checker whose failure
// window w tripped at the outcome o: the reason of the latest failed
// probe the window holds (o's own when none is held) and a message that
// counts the failures and ends with that probe's message.
func windowDown(o *scheduler.Outcome, w scheduler.Window) metav1.Condition {
	reason, message := o.Recent.FailureReason, o.Recent.FailureMessage
	count := o.Recent.Count(w)
	if count.Failures == 0 {
		// A first failure decided without a window (none held).
		reason, message = o.Result.Reason, o.Result.Message
		count = scheduler.WindowCount{Probes: 1, Failures: 1}
	}
	if reason == "" {
		reason = probing.ReasonConnectionFailed
	}
	if message == "" {
		message = string(reason)
	}
	text := fmt.Sprintf("%d of the last %d probes failed (latest: %s)", count.Failures, count.Probes, message)
	if count.Probes == 1 {
		text = "the last probe failed: " + message
	}
	return metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             string(reason),
		Message:            probing.Truncate(text, maxConditionMessage),
		ObservedGeneration: o.Generation,
		LastTransitionTime: metav1.NewTime(o.Time),
	}
}
