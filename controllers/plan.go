package controllers

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// plan is what this replica does with one checker, decided before anything
// is applied.
type plan struct {
	// check is the check to schedule, owned or not; nil removes the
	// checker from the scheduler.
	check *scheduler.Check
	// labels are the checker's labels, for its metrics.
	labels map[string]string
	// owned is true when this replica owns the checker: it probes it and
	// writes its status.
	owned bool
	// probes is true when this replica is one of the checker's vantage
	// points: it probes the checker (and, with more than one vantage point,
	// writes its own entry of status.vantagePoints). With one vantage
	// point it is owned.
	probes bool
	// vantagePoints is spec.vantagePoints, resolved; vantage the replicas
	// that probe the checker, the owner first, when it is above 1 (nil
	// otherwise).
	vantagePoints int
	vantage       []VantagePoint
	// notProbed, when not nil, is why the checker cannot be probed; it is
	// written to the status instead of a probe outcome.
	notProbed *probing.Result
	// suspended is true while spec.suspend is: the checker is not probed
	// and its owner writes Ready Unknown with reason Suspended.
	suspended bool
	// done is returned once the status is written: a terminal error for a
	// spec that only a change can fix.
	done error
	// deps is what the checkers it depends on (spec.dependsOn) say.
	deps dependencies
}

// plan decides what to do with the checker key, whose object is wc (nil
// when it does not exist). An error is a failed read worth retrying. The
// check's target is built, and what it needs read, only when this replica
// owns or probes the checker, or when built is set: the scheduler keeps
// the others on their grid without it (see buildCheck).
func (r *WebCheckerReconciler) plan(ctx context.Context, key types.NamespacedName, wc *webcheckerv1alpha1.WebChecker, built bool) (plan, error) {
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
	base := r.ownership(key, wc)
	if ptr.Deref(wc.Spec.Suspend, webcheckerv1alpha1.DefaultSuspend) {
		// Not probed (no Secret read either) until spec.suspend is false.
		base.suspended = true
		return base, nil
	}
	if !built && !base.owned && !base.probes {
		if check, err := checkspec.ScheduleFor(wc); err == nil {
			// Kept on the grid only: no dependency, Namespace or Secret
			// is read and no target built for a checker that another
			// replica probes and reports on. The scheduler's Builder
			// plans it in full if a turn finds it owned.
			r.Checks.Targets.Forget(key)
			base.check, base.labels = &check, wc.Labels
			return base, nil
		}
		// A spec the API server now rejects, stored before it did: the
		// path below plans it as the owner does (not probed, the error
		// terminal).
	}
	deps, err := r.dependenciesOf(ctx, wc)
	if err != nil {
		return plan{}, err
	}
	if deps.invalid != "" {
		// Not probed until the spec or a dependency (watched) changes.
		base.notProbed = &probing.Result{Reason: probing.Reason(webcheckerv1alpha1.ReasonInvalidDependency), Message: deps.invalid}
		return base, nil
	}
	base.deps = deps
	var secrets checkspec.SecretValues
	if r.Secrets != nil {
		secrets = checkspec.SecretReader(ctx, r.Secrets, wc.Namespace, r.SecretSelector)
	}
	var ns *corev1.Namespace
	if r.NamespaceEgress {
		var err error
		if ns, err = namespaceOf(ctx, r.Client, wc.Namespace); err != nil {
			return plan{}, err
		}
	}
	check, err := r.Checks.CheckForIn(ns, wc, secrets)
	var secretErr *checkspec.SecretError
	var readErr *checkspec.SecretReadError
	var conditionErr *checkspec.ConditionError
	var allowanceErr *checkspec.EgressAllowanceError
	var regexErr *checkspec.RegexTooComplexError
	p := base
	switch {
	case err == nil:
		p.check, p.labels = &check, wc.Labels
	case errors.As(err, &readErr):
		return plan{}, err
	case errors.As(err, &regexErr):
		// Not probed until the spec changes: say why, do not retry.
		p.notProbed = &probing.Result{Reason: probing.Reason(webcheckerv1alpha1.ReasonRegexTooComplex), Message: regexErr.Message}
		p.done = reconcile.TerminalError(err)
	case errors.As(err, &conditionErr):
		// Not probed until the spec changes: say why, do not retry.
		p.notProbed = &probing.Result{Reason: probing.ReasonInvalidCondition, Message: conditionErr.Message}
		p.done = reconcile.TerminalError(err)
	case errors.As(err, &allowanceErr):
		// Not probed until the annotation (watched) is fixed.
		p.notProbed = &probing.Result{Reason: probing.ReasonEgressDenied, Message: allowanceErr.Message}
	case errors.As(err, &secretErr):
		// Not probed until the Secret (watched) or the spec changes.
		p.notProbed = &probing.Result{Reason: secretErr.Reason, Message: secretErr.Message}
	default:
		// The API server's validation should have caught this; an object
		// stored before a stricter CRD can still get here. Report it, do
		// not retry: only a spec change can fix it.
		p.notProbed = &probing.Result{Reason: probing.ReasonInvalidTarget, Message: err.Error()}
		p.done = reconcile.TerminalError(err)
	}
	return p, nil
}

// buildCheck is the scheduler's Builder: the check of the checker key as
// the informer cache has it now, its target built, for a turn that found
// it owned while the scheduler held it without its target. It is false
// when the checker is gone or cannot be probed, or a read failed: that
// turn is skipped, and the reconcile of the change, on its way, applies it.
func (r *WebCheckerReconciler) buildCheck(ctx context.Context, key types.NamespacedName) (scheduler.Check, bool) {
	wc := &webcheckerv1alpha1.WebChecker{}
	if err := r.Client.Get(ctx, key, wc); err != nil {
		return scheduler.Check{}, false
	}
	p, err := r.plan(ctx, key, wc, true)
	if err != nil || p.check == nil {
		return scheduler.Check{}, false
	}
	return *p.check, true
}

// ownership is the part of the plan for wc (key) that the ring decides:
// whether this replica owns the checker, whether it probes it, and, for a
// checker with more than one vantage point, which replicas do.
func (r *WebCheckerReconciler) ownership(key types.NamespacedName, wc *webcheckerv1alpha1.WebChecker) plan {
	k := checkspec.VantagePointsOf(wc)
	p := plan{owned: r.Ownership.Owns(key), vantagePoints: k}
	p.probes = p.owned
	if k > 1 {
		p.vantage = r.Ownership.VantagePoints(key, k)
		p.probes = r.Ownership.Probes(key, k)
	}
	return p
}

// thresholds are those of the check, the zero Thresholds (every outcome
// decides at once) for a checker that is not probed.
func (p plan) thresholds() scheduler.Thresholds {
	if p.check == nil {
		return scheduler.Thresholds{}
	}
	return p.check.Thresholds
}
