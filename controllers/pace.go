package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Whether a checker's probes keep their turns, as the scheduler marks its
// outcomes (scheduler.Outcome.Overran and Behind), and the Events recorded
// when that changes. Nothing of it is written to the status: a checker
// probed late is no less Ready, and a status write per change would load
// the API server just when the replica is short of room.

// Event reasons recorded when a checker's probes stop or start keeping
// their turns.
const (
	// EventReasonProbeOverran (Warning): a turn of the checker was skipped
	// because its previous probe still ran; its probes take longer than
	// its interval allows, and it is probed less often than asked.
	EventReasonProbeOverran = "ProbeOverran"
	// EventReasonProbesBehind (Warning): the replica probing the checker
	// cannot keep up: its probes waited for the replica's bound on probes
	// in flight (or the namespace's share of it), or started late.
	EventReasonProbesBehind = "ProbesBehind"
	// EventReasonProbesOnSchedule (Normal): after either of the above,
	// the checker's probes have kept their turns for
	// scheduler.PaceHold intervals again.
	EventReasonProbesOnSchedule = "ProbesOnSchedule"
)

// pace is whether a checker's probes keep their turns: the marks of its
// latest outcome. The zero value keeps them.
type pace struct {
	overran, behind bool
}

func paceOf(o scheduler.Outcome) pace {
	return pace{overran: o.Overran, behind: o.Behind}
}

// paceEvents are the Events recorded when the pace of a checker probed
// every interval by the replica shard changes from before to after: a
// Warning for each mark that appears, a Normal one when the last mark
// is gone. Nothing when nothing changed, or only a mark went while
// another stays.
func paceEvents(before, after pace, interval, shard string) []statusEvent {
	var events []statusEvent
	if after.overran && !before.overran {
		events = append(events, statusEvent{corev1.EventTypeWarning, EventReasonProbeOverran,
			fmt.Sprintf("A probe took longer than the interval of %s allows, so a turn was skipped: the checker is probed less often than asked. Lower spec.timeout or raise spec.interval.", interval)})
	}
	if after.behind && !before.behind {
		events = append(events, statusEvent{corev1.EventTypeWarning, EventReasonProbesBehind,
			fmt.Sprintf("Replica %s cannot keep up: probes waited for its bound on probes in flight (or the namespace's share of it) or started late. See webchecker_scheduler_saturated; add replicas or raise the memory limit.", shard)})
	}
	if after == (pace{}) && before != (pace{}) {
		events = append(events, statusEvent{corev1.EventTypeNormal, EventReasonProbesOnSchedule,
			"Probes keep their turns again."})
	}
	return events
}

// reportPace records the Events of a change of the pace of the checker wc
// that this replica probes, whose latest outcome is latest, since the
// pace last reported for its generation: only a change records, however
// often the checker is reconciled.
func (r *WebCheckerReconciler) reportPace(wc *webcheckerv1alpha1.WebChecker, latest *scheduler.Outcome, p plan) {
	if p.check == nil || latest == nil {
		return // no outcome this replica may report: its pace is unknown
	}
	now := paceOf(*latest)
	before := r.ledger().swapPace(types.NamespacedName{Namespace: wc.Namespace, Name: wc.Name}, wc.Generation, now)
	for _, e := range paceEvents(before, now, p.check.Interval.String(), r.Ownership.ShardID()) {
		r.event(wc, e.eventType, e.reason, "%s", e.note)
	}
}

// swapPace records now as the pace of the checker at generation and
// returns the one recorded before (the zero pace for a new generation). A
// checker that keeps its turns and has no record gets none: most never
// need one.
func (l *ledger) swapPace(key types.NamespacedName, generation int64, now pace) (before pace) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.records[key]; now == (pace{}) && (c == nil || c.generation != generation) {
		return pace{}
	}
	c := l.of(key, generation)
	before, c.pace = c.pace, now
	return before
}
