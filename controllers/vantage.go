package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/scheduler"
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

// holdBack is how long the owner holds back writing u, the update of wc
// (several vantage points) under p: when the set of vantage points changed
// (a replica left, another took its place), writing at once would write
// the quorum twice, once without the newcomer and once with it. Nothing is
// held back when the status of Ready changes, when every vantage point has
// reported, or for longer than an interval and PendingGrace (a newcomer
// probes within an interval); the newcomer's entry triggers a reconcile
// itself.
func (r *WebCheckerReconciler) holdBack(wc *webcheckerv1alpha1.WebChecker, u statusUpdate, p plan) time.Duration {
	key := client.ObjectKeyFromObject(wc)
	if u.unreported == 0 {
		r.ledger().holdDone(key)
		return 0
	}
	if equality.Semantic.DeepEqual(&wc.Status, &u.status) || readyStatus(u.status.Conditions) != readyStatus(wc.Status.Conditions) {
		return 0
	}
	interval := webcheckerv1alpha1.DefaultInterval
	if p.check != nil {
		interval = p.check.Interval
	}
	return r.ledger().holdWait(key, wc.Generation, r.now(), interval+PendingGrace)
}

// writeEntry applies this replica's entry of the status.vantagePoints of
// the checker v describes, computed from its latest outcome (not nil),
// when it differs from the stored one and this replica still probes the
// checker. It returns the object as the API server returned it after the
// write, or v.wc when nothing was written.
func (r *WebCheckerReconciler) writeEntry(ctx context.Context, v statusView) (*webcheckerv1alpha1.WebChecker, error) {
	wc := v.wc
	stored := findEntry(wc.Status.VantagePoints, v.shard)
	next := v.entry()
	if stored != nil && equality.Semantic.DeepEqual(*stored, next) {
		return wc, nil
	}
	key := client.ObjectKeyFromObject(wc)
	// The ring may have moved since Reconcile looked, or this replica
	// fenced itself: never write for a checker it does not probe.
	if !r.Ownership.Probes(key, v.p.vantagePoints) {
		if err := pausedWrite(r.Ownership); err != nil {
			return nil, err
		}
		return wc, nil
	}
	now := r.now() // the write counts from when it was decided
	if wait := r.writeWait(key, wc.Generation, entryDetailOnly(stored, next), false, now); wait > 0 {
		return nil, &deferredWrite{after: wait}
	}
	body, err := json.Marshal(entryApply{
		APIVersion: webcheckerv1alpha1.GroupVersion.String(),
		Kind:       webcheckerKind,
		Metadata:   entryApplyMeta{Namespace: wc.Namespace, Name: wc.Name},
		Status:     entryApplyStatus{VantagePoints: []webcheckerv1alpha1.VantagePointStatus{next}},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding vantage point entry: %w", err)
	}
	fresh := wc.DeepCopy()
	err = r.Client.Status().Patch(ctx, fresh, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(VantageFieldManager(v.shard)), client.ForceOwnership)
	if ctx.Err() == nil {
		r.countWrite(err)
	}
	if err != nil {
		return nil, fmt.Errorf("applying vantage point entry of %s: %w", v.shard, err)
	}
	r.ledger().wrote(key, wc.Generation, wc.ResourceVersion, now)
	logf.FromContext(ctx).V(1).Info("Vantage point entry updated", "shard", v.shard, "ready", next.Ready, "reason", next.Reason)
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
// latest outcome o, given its stored entry (nil for none) and the
// checker's thresholds: what the Ready condition would be if that replica
// probed the checker alone (see nextReady).
func nextEntry(stored *webcheckerv1alpha1.VantagePointStatus, o *scheduler.Outcome, thresholds scheduler.Thresholds, shard, zone string) webcheckerv1alpha1.VantagePointStatus {
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
	setCondition(&conditions, nextReady(prev, o, thresholds))
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
