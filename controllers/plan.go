package controllers

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// plan is what this replica does with one checker, decided before anything
// is applied.
type plan struct {
	// check is the check to schedule, owned or not; nil removes the
	// checker from the scheduler.
	check *scheduler.Check
	// thresholds apply to the probes of check.
	thresholds Thresholds
	// labels are the checker's labels, for its metrics.
	labels map[string]string
	// owned is true when this replica owns the checker: it probes it and
	// writes its status.
	owned bool
	// notProbed, when not nil, is why the checker cannot be probed; it is
	// written to the status instead of a probe outcome.
	notProbed *probing.Result
	// suspended is true while spec.suspend is: the checker is not probed
	// and its owner writes Ready Unknown with reason Suspended.
	suspended bool
	// done is returned once the status is written: a terminal error for a
	// spec that only a change can fix.
	done error
}

// plan decides what to do with the checker key, whose object is wc (nil
// when it does not exist). An error is a failed read worth retrying.
func (r *WebCheckerReconciler) plan(ctx context.Context, key types.NamespacedName, wc *webcheckerv1alpha1.WebChecker) (plan, error) {
	if wc == nil || !wc.DeletionTimestamp.IsZero() {
		// Gone or going: stop probing.
		return plan{}, nil
	}
	if r.NamespaceSelector != nil {
		selected, err := namespaceSelected(ctx, r.Client, key.Namespace)
		if err != nil || !selected {
			return plan{}, err
		}
	}
	if ptr.Deref(wc.Spec.Suspend, webcheckerv1alpha1.DefaultSuspend) {
		// Not probed (no Secret read either) until spec.suspend is false.
		return plan{owned: r.Ownership.Owns(key), suspended: true}, nil
	}
	var secrets SecretValues
	if r.Secrets != nil {
		secrets = SecretReader(ctx, r.Secrets, wc.Namespace, r.SecretSelector)
	}
	check, err := r.Checks.CheckFor(wc, secrets)
	var thresholds Thresholds
	if err == nil {
		thresholds, err = ThresholdsFor(wc)
	}
	owned := r.Ownership.Owns(key)
	var secretErr *SecretError
	var readErr *secretReadError
	var conditionErr *ConditionError
	switch {
	case err == nil:
		return plan{check: &check, thresholds: thresholds, labels: wc.Labels, owned: owned}, nil
	case errors.As(err, &readErr):
		return plan{}, err
	case errors.As(err, &conditionErr):
		// Not probed until the spec changes: say why, do not retry.
		return plan{
			owned:     owned,
			notProbed: &probing.Result{Reason: probing.ReasonInvalidCondition, Message: conditionErr.Message},
			done:      reconcile.TerminalError(err),
		}, nil
	case errors.As(err, &secretErr):
		// Not probed until the Secret (watched) or the spec changes.
		return plan{owned: owned, notProbed: &probing.Result{Reason: secretErr.Reason, Message: secretErr.Message}}, nil
	default:
		// The API server's validation should have caught this; an object
		// stored before a stricter CRD can still get here. Report it, do
		// not retry: only a spec change can fix it.
		return plan{
			owned:     owned,
			notProbed: &probing.Result{Reason: probing.ReasonInvalidTarget, Message: err.Error()},
			done:      reconcile.TerminalError(err),
		}, nil
	}
}
