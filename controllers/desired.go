package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// The status a checker should have, computed from what the reconciler
// knows of it at one moment, and the Events that writing it records.
// Nothing here reads or writes anything: Reconcile gathers the view, and
// writeStatus applies the update on every path (one vantage point,
// several, suspended).

// statusView is everything the status of one checker is computed from.
type statusView struct {
	// wc is the checker as read; its status is the stored one.
	wc *webcheckerv1alpha1.WebChecker
	// p is what this replica does with it: ownership and vantage points,
	// suspension, why it cannot be probed, the check and its thresholds.
	p plan
	// latest is the newest outcome of the current generation, with its
	// streak, or the reason the checker cannot be probed (p.notProbed); nil
	// when there is none this replica may report.
	latest *scheduler.Outcome
	// shard is this replica's shard id.
	shard string
	// now is when the view was taken.
	now time.Time
	// maintenance is what the checker's maintenance windows say at now.
	maintenance maintenanceState
}

// statusUpdate is the status a checker should have, and the Events to
// record once it is written.
type statusUpdate struct {
	status webcheckerv1alpha1.WebCheckerStatus
	// pending is true when the update writes Pending: the checker awaits
	// its first result, and the write waits PendingGrace for it.
	pending bool
	// unreported counts the vantage points with no entry of the current
	// generation yet (several vantage points only).
	unreported int
	events     []statusEvent
}

// statusEvent is an Event to record about the checker.
type statusEvent struct {
	eventType, reason, note string
}

// desiredStatus is the status that the owner of the checker v describes
// writes, and the Events that writing it records:
//
//   - suspended: Ready Unknown with reason Suspended; the rest stays as the
//     last probe left it;
//   - one vantage point: Ready after the latest outcome and its streak, or
//     the failure window it closes (see nextReady), the probe's own fields
//     (status code, certificate), or
//     Pending while there is neither an outcome nor a stored Ready
//     condition; nothing of quorum probing stays;
//   - several vantage points: Ready from the majority of the entries in
//     status.vantagePoints (see quorum.ready), status.quorum, the
//     VantagePointsAvailable condition, and the entries of replicas that
//     still probe the checker;
//   - on every path, the Reconciling condition while the status holds no
//     result of the current generation (see awaitingResult).
//
// On every path the Maintenance condition follows the checker's windows
// (see maintenanceAt), and a failure while a dependency is down reads
// DependencyDown (see setDependencyDown). Without an outcome the status is
// never given a result: a checker taken over before this replica has
// probed it keeps what its previous owner wrote.
func desiredStatus(v statusView) statusUpdate {
	var u statusUpdate
	switch {
	case v.p.suspended:
		u.status = v.suspended()
	case v.p.vantage != nil:
		u = v.quorum()
	default:
		u.status, u.pending = v.single()
	}
	v.setMaintenance(&u.status)
	v.setDependencyDown(&u.status)
	v.setReconciling(&u.status)
	u.events = statusEvents(v.wc.Status.Conditions, u.status.Conditions)
	return u
}

// setMaintenance sets the Maintenance condition of s, or removes it from a
// checker without windows.
func (v statusView) setMaintenance(s *webcheckerv1alpha1.WebCheckerStatus) {
	if v.maintenance.condition == nil {
		meta.RemoveStatusCondition(&s.Conditions, webcheckerv1alpha1.ConditionMaintenance)
		return
	}
	setCondition(&s.Conditions, *v.maintenance.condition)
}

// suspended is the status of a suspended checker.
func (v statusView) suspended() webcheckerv1alpha1.WebCheckerStatus {
	s := *v.wc.Status.DeepCopy()
	s.Shard, s.ObservedGeneration = v.shard, v.wc.Generation
	setCondition(&s.Conditions, metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionReady,
		Status:             metav1.ConditionUnknown,
		Reason:             webcheckerv1alpha1.ReasonSuspended,
		Message:            suspendedMessage,
		ObservedGeneration: v.wc.Generation,
		LastTransitionTime: metav1.NewTime(v.now),
	})
	return s
}

// single is the status of a checker with one vantage point, and whether
// it is Pending.
func (v statusView) single() (s webcheckerv1alpha1.WebCheckerStatus, pending bool) {
	s = *v.wc.Status.DeepCopy()
	switch {
	case v.latest != nil:
		s.Shard, s.ObservedGeneration = v.shard, v.latest.Generation
		v.setProbeFields(&s)
		stored := meta.FindStatusCondition(v.wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
		setCondition(&s.Conditions, nextReady(stored, v.latest, v.p.thresholds()))
	case awaitingFirstResult(v.wc):
		s.Shard, s.ObservedGeneration = v.shard, v.wc.Generation
		meta.SetStatusCondition(&s.Conditions, pendingCondition(v.wc.Generation, v.now))
		pending = true
	}
	// With one vantage point, nothing of quorum probing stays (the
	// checker may have had more before).
	s.Quorum, s.VantagePoints = "", nil
	meta.RemoveStatusCondition(&s.Conditions, ConditionVantagePointsAvailable)
	return s, pending
}

// quorum is the update of a checker with several vantage points, from the
// entries stored in its status.
func (v statusView) quorum() statusUpdate {
	gen := v.wc.Generation
	s := *v.wc.Status.DeepCopy()
	s.Shard, s.ObservedGeneration = v.shard, gen
	if v.latest != nil {
		v.setProbeFields(&s)
	}
	q := countQuorum(v.wc.Status.VantagePoints, v.p.vantage, v.p.vantagePoints, gen)
	s.Quorum = q.summary()
	s.VantagePoints = entriesOf(v.wc.Status.VantagePoints, v.p.vantage)
	setCondition(&s.Conditions, q.available(gen, v.now))
	stored := meta.FindStatusCondition(v.wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	if stored != nil && stored.Reason == webcheckerv1alpha1.ReasonSuspended {
		stored = nil
	}
	u := statusUpdate{unreported: q.unreported()}
	switch ready := q.ready(stored, gen, v.now); {
	case ready != nil:
		setCondition(&s.Conditions, *ready)
	case awaitingFirstResult(v.wc):
		// No majority yet, and nothing to keep.
		meta.SetStatusCondition(&s.Conditions, pendingCondition(gen, v.now))
		u.pending = true
	}
	u.status = s
	return u
}

// entry is this replica's entry of status.vantagePoints after the latest
// outcome, which must not be nil: what the Ready condition would be if it
// probed the checker alone (see nextEntry).
func (v statusView) entry() webcheckerv1alpha1.VantagePointStatus {
	stored := findEntry(v.wc.Status.VantagePoints, v.shard)
	return nextEntry(stored, v.latest, v.p.thresholds(), v.shard, zoneOf(v.p.vantage, v.shard))
}

// setProbeFields sets the fields of s that the owner's own latest outcome
// decides: the HTTP status code, the certificate expiry, the
// CertificateValid condition and each address's result.
func (v statusView) setProbeFields(s *webcheckerv1alpha1.WebCheckerStatus) {
	s.HTTPStatusCode = int32(v.latest.Result.StatusCode)
	s.Addresses = addressStatuses(v.latest.Result.Addresses)
	s.CertificateExpiry = nil
	if expiry := v.latest.Result.CertificateExpiry; expiry != nil {
		s.CertificateExpiry = &metav1.Time{Time: expiry.UTC().Truncate(time.Second)}
	}
	if v.p.check != nil {
		setCondition(&s.Conditions, certificateCondition(v.latest, v.p.check.Target))
	}
}

// addressStatuses is status.addresses after the results of each address
// of a probe; nil for a probe of the name as a client connects.
func addressStatuses(results []probing.AddressResult) []webcheckerv1alpha1.AddressStatus {
	if len(results) == 0 {
		return nil
	}
	out := make([]webcheckerv1alpha1.AddressStatus, 0, min(len(results), webcheckerv1alpha1.MaxAddresses))
	for _, a := range results[:min(len(results), webcheckerv1alpha1.MaxAddresses)] {
		st := webcheckerv1alpha1.AddressStatus{Address: a.Address.String(), Ready: metav1.ConditionFalse, Reason: string(a.Reason), Message: a.Message}
		if a.Success {
			st.Ready, st.Reason, st.Message = metav1.ConditionTrue, string(probing.ReasonSucceeded), ""
		}
		if st.Reason == "" {
			st.Reason = string(probing.ReasonConnectionFailed)
		}
		out = append(out, st)
	}
	return out
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
