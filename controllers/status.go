package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// handleWriteError retries conflicts quietly after a short delay (the next
// attempt re-reads the object), requeues a deferred write for when it may
// be made, and returns other errors for backoff.
func (r *WebCheckerReconciler) handleWriteError(ctx context.Context, err error) (ctrl.Result, error) {
	if d, ok := errors.AsType[*deferredWrite](err); ok {
		return ctrl.Result{RequeueAfter: d.after}, nil
	}
	if apierrors.IsConflict(err) {
		logf.FromContext(ctx).V(1).Info("Status patch conflicted, retrying after re-reading")
		return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
	}
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	if ctx.Err() != nil {
		// Shutting down: the write was cut short, the next owner redoes it.
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// writeStatus writes the status u to wc when it differs from the stored
// one, and records u's Events once it is written: the one patch step and
// the one event step of every path.
func (r *WebCheckerReconciler) writeStatus(ctx context.Context, wc *webcheckerv1alpha1.WebChecker, u statusUpdate) error {
	written, err := r.patchStatus(ctx, wc, &u.status)
	if err != nil || !written {
		return err
	}
	for _, e := range u.events {
		r.event(wc, e.eventType, e.reason, "%s", e.note)
	}
	return nil
}

// patchStatus patches the status of wc to desired when it differs from the
// stored one and this replica still owns the checker, and reports whether
// it wrote.
func (r *WebCheckerReconciler) patchStatus(ctx context.Context, wc *webcheckerv1alpha1.WebChecker, desired *webcheckerv1alpha1.WebCheckerStatus) (bool, error) {
	if equality.Semantic.DeepEqual(&wc.Status, desired) {
		r.recordReady(wc, desired)
		return false, nil
	}

	// Ownership may have moved since Reconcile looked (a ring change, or
	// this replica fenced itself): never write a status we do not own.
	key := client.ObjectKeyFromObject(wc)
	if !r.Ownership.Owns(key) {
		return false, pausedWrite(r.Ownership)
	}
	// The MessagePeriod counts from the instant writeWait judged, not
	// from when the patch returned: a slow patch does not push the next
	// detail write back past the period.
	now := r.now()
	if wait := r.writeWait(key, wc.Generation, detailOnly(&wc.Status, desired), renameOnly(&wc.Status, desired), now); wait > 0 {
		return false, &deferredWrite{after: wait}
	}
	base := wc.DeepCopy()
	wc.Status = *desired
	// The optimistic lock makes the patch fail with a conflict when the
	// object changed since we read it: a status is never overwritten
	// blindly, and the retry starts from a fresh read.
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	err := r.Client.Status().Patch(ctx, wc, patch)
	if ctx.Err() == nil { // a write cut short by shutdown is no result
		r.countWrite(err)
	}
	if err != nil {
		return false, fmt.Errorf("patching WebChecker status: %w", err)
	}
	r.ledger().wrote(key, wc.Generation, base.ResourceVersion, now)
	r.recordReady(wc, desired)
	logf.FromContext(ctx).V(1).Info("Status updated", "ready", readyStatus(desired.Conditions), "httpStatusCode", desired.HTTPStatusCode)
	return true, nil
}

// pausedWrite is the error of a write refused because this replica does
// not own the checker: a deferredWrite while the replica is paused (see
// Ownership.Paused), whose checkers stay its own; else nil, the write being
// another replica's.
func pausedWrite(o Ownership) error {
	if o.Paused() {
		return &deferredWrite{after: pausedRetryDelay}
	}
	return nil
}

// writeWait is how long a status write of the checker at generation must
// wait, at now, under the reconciler's NamespaceLimits: a write that changes only
// details (detail) waits out the checker's MessagePeriod, and any write
// waits while its namespace is over its share of status writes, a write
// that only renames status.shard (rename) while it has no write to spare
// (see fairness.writeWait). Zero means write now, and the write is counted
// in the namespace's share.
func (r *WebCheckerReconciler) writeWait(key types.NamespacedName, generation int64, detail, rename bool, now time.Time) time.Duration {
	if detail && r.Limits.MessagePeriod > 0 {
		if wait := r.ledger().detailWait(key, generation, now, r.Limits.MessagePeriod); wait > 0 {
			return wait
		}
	}
	return r.fairness().writeWait(key.Namespace, now, rename)
}

// recordReady tells the Ready recorder the status of wc's Ready condition
// in status, which the API server holds.
func (r *WebCheckerReconciler) recordReady(wc *webcheckerv1alpha1.WebChecker, status *webcheckerv1alpha1.WebCheckerStatus) {
	if r.Ready != nil {
		key := client.ObjectKeyFromObject(wc)
		r.Ready.Set(key, readyStatus(status.Conditions))
		r.Ready.SetMaintenance(key, conditionOf(status.Conditions, webcheckerv1alpha1.ConditionMaintenance).Status)
		r.Ready.SetDependencyDown(key, conditionOf(status.Conditions, webcheckerv1alpha1.ConditionReady).Reason == webcheckerv1alpha1.ReasonDependencyDown)
	}
}

// countWrite counts a status patch that returned err.
func (r *WebCheckerReconciler) countWrite(err error) {
	if r.Metrics != nil {
		r.Metrics.StatusWritten(err)
	}
}
