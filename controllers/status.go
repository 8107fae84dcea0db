package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// writeStatus computes the desired status from the newest outcome of the
// current generation (nil when there is none yet) under p and patches it
// when it differs from the stored one. Without an outcome it writes only
// the Pending condition of a checker that has none (Reconcile calls it
// only once PendingGrace has passed): never a status of a checker taken
// over before this replica has probed it.
func (r *WebCheckerReconciler) writeStatus(ctx context.Context, wc *webcheckerv1alpha1.WebChecker, latest *reported, p plan) error {
	desired := wc.Status.DeepCopy()
	switch {
	case latest != nil:
		desired.Shard = r.Ownership.ShardID()
		desired.ObservedGeneration = latest.Generation
		setProbeFields(desired, latest, p)
		stored := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
		setCondition(&desired.Conditions, nextReady(stored, &latest.Outcome, latest.streak, p.thresholds))
	case awaitingFirstResult(wc):
		desired.Shard = r.Ownership.ShardID()
		desired.ObservedGeneration = wc.Generation
		meta.SetStatusCondition(&desired.Conditions, pendingCondition(wc.Generation, r.now()))
	}
	// With one vantage point, nothing of quorum probing stays (the
	// checker may have had more before).
	desired.Quorum, desired.VantagePoints = "", nil
	meta.RemoveStatusCondition(&desired.Conditions, ConditionVantagePointsAvailable)
	before, err := r.patchStatus(ctx, wc, desired)
	if err != nil || before == nil {
		return err
	}
	if latest != nil {
		r.recordReadyChange(wc, conditionOf(before.Conditions, webcheckerv1alpha1.ConditionReady), conditionOf(desired.Conditions, webcheckerv1alpha1.ConditionReady))
		r.recordCertificateChange(wc, conditionOf(before.Conditions, webcheckerv1alpha1.ConditionCertificateValid), conditionOf(desired.Conditions, webcheckerv1alpha1.ConditionCertificateValid))
	}
	return nil
}

// pendingCondition is the Ready condition of a checker awaiting its first
// result at generation, stamped now.
func pendingCondition(generation int64, now time.Time) metav1.Condition {
	return metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionReady,
		Status:             metav1.ConditionUnknown,
		Reason:             webcheckerv1alpha1.ReasonPending,
		Message:            pendingMessage,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	}
}

// setProbeFields sets the fields of desired that the owner's own newest
// outcome latest decides under p: the HTTP status code, the certificate
// expiry and the CertificateValid condition.
func setProbeFields(desired *webcheckerv1alpha1.WebCheckerStatus, latest *reported, p plan) {
	desired.HTTPStatusCode = int32(latest.Result.StatusCode)
	desired.CertificateExpiry = nil
	if expiry := latest.Result.CertificateExpiry; expiry != nil {
		desired.CertificateExpiry = &metav1.Time{Time: expiry.UTC().Truncate(time.Second)}
	}
	if p.check != nil {
		setCondition(&desired.Conditions, certificateCondition(&latest.Outcome, p.check.Target))
	}
}

// patchStatus patches the status of wc to desired when it differs from the
// stored one and this replica still owns the checker. It returns the
// status as it was before the patch, or nil when nothing was written.
func (r *WebCheckerReconciler) patchStatus(ctx context.Context, wc *webcheckerv1alpha1.WebChecker, desired *webcheckerv1alpha1.WebCheckerStatus) (*webcheckerv1alpha1.WebCheckerStatus, error) {
	if equality.Semantic.DeepEqual(&wc.Status, desired) {
		r.recordReady(wc, desired)
		return nil, nil
	}

	// Ownership may have moved since Reconcile looked (a ring change, or
	// this replica fenced itself): never write a status we do not own.
	key := client.ObjectKeyFromObject(wc)
	if !r.Ownership.Owns(key) {
		return nil, nil
	}
	if wait := r.writeWait(key, detailOnly(&wc.Status, desired)); wait > 0 {
		return nil, &deferredWrite{after: wait}
	}
	before := wc.Status.DeepCopy()
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
		return nil, fmt.Errorf("patching WebChecker status: %w", err)
	}
	if r.Tracker != nil {
		r.Tracker.wrote(key, base.ResourceVersion)
		r.Tracker.wroteAt(key, r.now())
	}
	r.recordReady(wc, desired)
	logf.FromContext(ctx).V(1).Info("Status updated", "ready", readyStatus(desired.Conditions), "httpStatusCode", desired.HTTPStatusCode)
	return before, nil
}

// writeWait is how long a status write of the checker must wait, at the
// reconciler's clock, under its NamespaceLimits: a write that changes only
// details (detail) waits out the checker's MessagePeriod, and any write
// waits while its namespace is over its share of status writes. Zero means
// write now, and the write is counted in the namespace's share.
func (r *WebCheckerReconciler) writeWait(key types.NamespacedName, detail bool) time.Duration {
	now := r.now()
	if detail && r.Limits.MessagePeriod > 0 && r.Tracker != nil {
		if wait := r.Tracker.detailWait(key, now, r.Limits.MessagePeriod); wait > 0 {
			return wait
		}
	}
	return r.fairness().writeWait(key.Namespace, now)
}

// recordReady tells the Ready recorder the status of wc's Ready condition
// in status, which the API server holds.
func (r *WebCheckerReconciler) recordReady(wc *webcheckerv1alpha1.WebChecker, status *webcheckerv1alpha1.WebCheckerStatus) {
	if r.Ready != nil {
		r.Ready.Set(client.ObjectKeyFromObject(wc), readyStatus(status.Conditions))
	}
}

// countWrite counts a status patch that returned err.
func (r *WebCheckerReconciler) countWrite(err error) {
	if r.Metrics != nil {
		r.Metrics.StatusWritten(err)
	}
}
