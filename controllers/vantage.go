package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
)

// VantageFieldManagerPrefix starts the field manager of every replica's
// server-side apply of its own entry of status.vantagePoints; the shard id
// follows (see VantageFieldManager).
const VantageFieldManagerPrefix = "webchecker-vantage-"

// maxFieldManager is the longest field manager the API server accepts.
const maxFieldManager = 128

// VantageFieldManager is the field manager with which the replica shard
// applies its entry of status.vantagePoints: its own, so that replicas
// never take each other's fields. An id too long for a field manager is
// shortened and given a hash of the whole.
func VantageFieldManager(shard string) string {
	m := VantageFieldManagerPrefix + shard
	if len(m) <= maxFieldManager {
		return m
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(shard))
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	return m[:maxFieldManager-len(suffix)] + suffix
}

// VantagePoint is one replica that probes a checker.
type VantagePoint struct {
	// Shard is the replica's shard id.
	Shard string
	// Zone is the replica's zone, empty when unknown.
	Zone string
}

// vantagePointsChanged passes the updates of a WebChecker whose
// status.vantagePoints changed: its owner derives Ready from them.
func vantagePointsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok1 := e.ObjectOld.(*webcheckerv1alpha1.WebChecker)
			updated, ok2 := e.ObjectNew.(*webcheckerv1alpha1.WebChecker)
			return ok1 && ok2 && !equality.Semantic.DeepEqual(old.Status.VantagePoints, updated.Status.VantagePoints)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// reconcileQuorum brings the status of a checker with several vantage
// points up to date under p: this replica's own entry of
// status.vantagePoints, when it probes the checker and its state changed,
// then, when it owns the checker, the Ready condition from the majority of
// the entries, status.quorum, the VantagePointsAvailable condition, and the
// removal of the entries of replicas that no longer probe the checker.
func (r *WebCheckerReconciler) reconcileQuorum(ctx context.Context, wc *webcheckerv1alpha1.WebChecker, p plan) (ctrl.Result, error) {
	latest := r.outcome(wc, p)
	if p.probes && latest != nil {
		fresh, err := r.writeEntry(ctx, wc, latest, p)
		if err != nil {
			return r.handleWriteError(ctx, err)
		}
		wc = fresh
	}
	if !p.owned {
		return ctrl.Result{}, p.done
	}
	now := r.now()
	desired := wc.Status.DeepCopy()
	desired.Shard = r.Ownership.ShardID()
	desired.ObservedGeneration = wc.Generation
	if latest != nil {
		setProbeFields(desired, latest, p)
	}
	q := countQuorum(wc.Status.VantagePoints, p.vantage, p.vantagePoints, wc.Generation)
	desired.Quorum = q.summary()
	desired.VantagePoints = entriesOf(wc.Status.VantagePoints, p.vantage)
	setCondition(&desired.Conditions, q.available(wc.Generation, now))
	stored := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	if stored != nil && stored.Reason == webcheckerv1alpha1.ReasonSuspended {
		stored = nil
	}
	switch ready := q.ready(stored, wc.Generation, now); {
	case ready != nil:
		setCondition(&desired.Conditions, *ready)
	case awaitingFirstResult(wc):
		// No majority yet, and nothing to keep: Pending once the grace
		// has passed.
		if r.Tracker != nil {
			if wait := r.Tracker.pendingWait(client.ObjectKeyFromObject(wc), now, PendingGrace); wait > 0 {
				return ctrl.Result{RequeueAfter: wait}, nil
			}
		}
		meta.SetStatusCondition(&desired.Conditions, pendingCondition(wc.Generation, now))
	}
	if wait := r.holdBack(wc, desired, q, p); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	before, err := r.patchStatus(ctx, wc, desired)
	if err != nil {
		return r.handleWriteError(ctx, err)
	}
	if before != nil {
		r.recordReadyChange(wc, conditionOf(before.Conditions, webcheckerv1alpha1.ConditionReady), conditionOf(desired.Conditions, webcheckerv1alpha1.ConditionReady))
		if latest != nil {
			r.recordCertificateChange(wc, conditionOf(before.Conditions, webcheckerv1alpha1.ConditionCertificateValid), conditionOf(desired.Conditions, webcheckerv1alpha1.ConditionCertificateValid))
		}
	}
	return ctrl.Result{}, p.done
}

// holdBack is how long the owner holds back writing desired, the status
// of wc under p whose vantage points count q, and waits for the vantage
// points that have not reported yet: when the set of vantage points
// changed (a replica left, another took its place), writing at once would
// write the quorum twice, once without the newcomer and once with it.
// Nothing is held back when the status of Ready changes, when every
// vantage point has reported, or for longer than an interval and
// PendingGrace (a newcomer probes within an interval); the newcomer's
// entry triggers a reconcile itself.
func (r *WebCheckerReconciler) holdBack(wc *webcheckerv1alpha1.WebChecker, desired *webcheckerv1alpha1.WebCheckerStatus, q quorum, p plan) time.Duration {
	if r.Tracker == nil {
		return 0
	}
	key := client.ObjectKeyFromObject(wc)
	if q.unreported() == 0 {
		r.Tracker.holdDone(key)
		return 0
	}
	if equality.Semantic.DeepEqual(&wc.Status, desired) || readyStatus(desired.Conditions) != readyStatus(wc.Status.Conditions) {
		return 0
	}
	interval := webcheckerv1alpha1.DefaultInterval
	if p.check != nil {
		interval = p.check.Interval
	}
	return r.Tracker.holdWait(key, r.now(), interval+PendingGrace)
}

// writeEntry applies this replica's entry of the status.vantagePoints of
// wc, computed from its newest outcome latest after the thresholds, when
// it differs from the stored one and this replica still probes the
// checker. It returns the object as the API server returned it after the
// write, or wc when nothing was written.
func (r *WebCheckerReconciler) writeEntry(ctx context.Context, wc *webcheckerv1alpha1.WebChecker, latest *reported, p plan) (*webcheckerv1alpha1.WebChecker, error) {
	shard := r.Ownership.ShardID()
	stored := findEntry(wc.Status.VantagePoints, shard)
	next := nextEntry(stored, latest, p.thresholds, shard, zoneOf(p.vantage, shard))
	if stored != nil && equality.Semantic.DeepEqual(*stored, next) {
		return wc, nil
	}
	key := client.ObjectKeyFromObject(wc)
	// The ring may have moved since Reconcile looked, or this replica
	// fenced itself: never write for a checker it does not probe.
	if !r.Ownership.Probes(key, p.vantagePoints) {
		return wc, nil
	}
	if wait := r.writeWait(key, entryDetailOnly(stored, next)); wait > 0 {
		return nil, &deferredWrite{after: wait}
	}
	body, err := json.Marshal(entryApply{
		APIVersion: webcheckerv1alpha1.GroupVersion.String(),
		Kind:       "WebChecker",
		Metadata:   entryApplyMeta{Namespace: wc.Namespace, Name: wc.Name},
		Status:     entryApplyStatus{VantagePoints: []webcheckerv1alpha1.VantagePointStatus{next}},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding vantage point entry: %w", err)
	}
	fresh := wc.DeepCopy()
	err = r.Client.Status().Patch(ctx, fresh, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(VantageFieldManager(shard)), client.ForceOwnership)
	if ctx.Err() == nil {
		r.countWrite(err)
	}
	if err != nil {
		return nil, fmt.Errorf("applying vantage point entry of %s: %w", shard, err)
	}
	if r.Tracker != nil {
		r.Tracker.wrote(key, wc.ResourceVersion)
		r.Tracker.wroteAt(key, r.now())
	}
	logf.FromContext(ctx).V(1).Info("Vantage point entry updated", "shard", shard, "ready", next.Ready, "reason", next.Reason)
	return fresh, nil
}

// entryApply is the server-side apply configuration of one replica's
// entry: only the fields that replica owns.
type entryApply struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   entryApplyMeta   `json:"metadata"`
	Status     entryApplyStatus `json:"status"`
}

type entryApplyMeta struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type entryApplyStatus struct {
	VantagePoints []webcheckerv1alpha1.VantagePointStatus `json:"vantagePoints"`
}

// nextEntry is the entry of the vantage point shard (in zone) after its
// newest outcome o, given its stored entry (nil for none) and the
// checker's thresholds: what the Ready condition would be if that replica
// probed the checker alone (see nextReady).
func nextEntry(stored *webcheckerv1alpha1.VantagePointStatus, o *reported, thresholds checkspec.Thresholds, shard, zone string) webcheckerv1alpha1.VantagePointStatus {
	var conditions []metav1.Condition
	var prev *metav1.Condition
	if stored != nil {
		conditions = []metav1.Condition{{
			Type:               webcheckerv1alpha1.ConditionReady,
			Status:             stored.Ready,
			Reason:             stored.Reason,
			Message:            stored.Message,
			ObservedGeneration: stored.ObservedGeneration,
			LastTransitionTime: stored.LastTransitionTime,
		}}
		prev = &conditions[0]
	}
	setCondition(&conditions, nextReady(prev, &o.Outcome, o.streak, thresholds))
	c := conditions[0]
	return webcheckerv1alpha1.VantagePointStatus{
		Shard:              shard,
		Zone:               zone,
		Ready:              c.Status,
		Reason:             c.Reason,
		Message:            c.Message,
		ObservedGeneration: c.ObservedGeneration,
		LastTransitionTime: c.LastTransitionTime,
	}
}

// zoneOf is the zone of shard in set, empty when it is not there.
func zoneOf(set []VantagePoint, shard string) string {
	for _, vp := range set {
		if vp.Shard == shard {
			return vp.Zone
		}
	}
	return ""
}
