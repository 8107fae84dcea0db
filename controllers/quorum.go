package controllers

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
)

// Quorum probing: a checker with spec.vantagePoints above 1 is probed by
// that many replicas, each of which reports its own state in an entry of
// status.vantagePoints; its owner derives the Ready condition from the
// majority of those entries.

// The VantagePointsAvailable condition says whether as many replicas probe
// a checker with several vantage points as it asks for.
const (
	// ConditionVantagePointsAvailable is True while as many replicas as
	// spec.vantagePoints probe the checker, False while fewer replicas
	// are live (then every replica probes it).
	ConditionVantagePointsAvailable = "VantagePointsAvailable"
	// ReasonVantagePointsAvailable is its reason while True.
	ReasonVantagePointsAvailable = "Available"
	// ReasonTooFewReplicas is its reason while False.
	ReasonTooFewReplicas = "TooFewReplicas"
)

// quorum is the count of a checker's vantage points by state.
type quorum struct {
	// size is how many replicas probe the checker; requested how many it
	// asks for (more than size when fewer replicas are live).
	size, requested int
	// up and down are the entries of the current generation that are
	// True and False, in the order of the vantage points.
	up, down []webcheckerv1alpha1.VantagePointStatus
	// names are the vantage points' names in messages, by shard.
	names map[string]string
}

// countQuorum counts the entries of the vantage points in set that
// describe generation; entries of other replicas, and of other
// generations, do not count.
func countQuorum(entries []webcheckerv1alpha1.VantagePointStatus, set []VantagePoint, requested int, generation int64) quorum {
	q := quorum{size: len(set), requested: requested, names: vantagePointNames(set)}
	for _, vp := range set {
		e := findEntry(entries, vp.Shard)
		if e == nil || e.ObservedGeneration != generation {
			continue
		}
		switch e.Ready {
		case metav1.ConditionTrue:
			q.up = append(q.up, *e)
		case metav1.ConditionFalse:
			q.down = append(q.down, *e)
		}
	}
	return q
}

// unreported is how many vantage points have no entry of the current
// generation yet, or one that is neither True nor False.
func (q quorum) unreported() int { return q.size - len(q.up) - len(q.down) }

// summary is status.quorum: how many vantage points succeed, of how many
// probe the checker.
func (q quorum) summary() string { return fmt.Sprintf("%d/%d", len(q.up), q.size) }

// ready is the Ready condition that q decides, given the stored one (nil
// for none), at generation and now: True while a majority of the vantage
// points are True, False while a majority are False, and otherwise the
// stored condition with a message that says there is no majority (nil
// when none is stored). A False condition takes the most common reason of
// the failing vantage points.
func (q quorum) ready(stored *metav1.Condition, generation int64, now time.Time) *metav1.Condition {
	majority := q.size/2 + 1
	c := metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionReady,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	}
	switch {
	case q.size > 0 && len(q.up) >= majority:
		c.Status, c.Reason = metav1.ConditionTrue, string(probing.ReasonSucceeded)
		c.Message = fmt.Sprintf("%d of %d vantage points succeed (%s)", len(q.up), q.size, q.list(q.up, false))
	case q.size > 0 && len(q.down) >= majority:
		c.Status, c.Reason = metav1.ConditionFalse, commonReason(q.down)
		c.Message = fmt.Sprintf("%d of %d vantage points fail (%s): %s", len(q.down), q.size, q.list(q.down, true), q.down[0].Message)
	case stored == nil:
		return nil
	default:
		c = *stored
		c.ObservedGeneration = generation
		c.Message = fmt.Sprintf("No majority of %d vantage points: %d succeed, %d fail, %d have not reported; %s is kept",
			q.size, len(q.up), len(q.down), q.size-len(q.up)-len(q.down), stored.Status)
	}
	if q.size < q.requested {
		c.Message += fmt.Sprintf(" (%d vantage points requested, %d replicas live: every replica probes the checker)", q.requested, q.size)
	}
	c.Message = probing.Truncate(c.Message, maxConditionMessage)
	return &c
}

// available is the VantagePointsAvailable condition of q at generation
// and now.
func (q quorum) available(generation int64, now time.Time) metav1.Condition {
	c := metav1.Condition{
		Type:               ConditionVantagePointsAvailable,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonVantagePointsAvailable,
		Message:            fmt.Sprintf("%d replicas probe the checker, as requested", q.size),
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	}
	if q.size < q.requested {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonTooFewReplicas
		c.Message = fmt.Sprintf("%d vantage points requested, but only %d replicas are live: every replica probes the checker", q.requested, q.size)
	}
	return c
}

// list names the vantage points of entries, with their reasons if
// withReason.
func (q quorum) list(entries []webcheckerv1alpha1.VantagePointStatus, withReason bool) string {
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		part := q.names[e.Shard]
		if withReason {
			part += ": " + e.Reason
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// vantagePointNames names each vantage point of set by its zone where the
// zone is known and no other vantage point of set is in it, else by its
// shard id.
func vantagePointNames(set []VantagePoint) map[string]string {
	inZone := map[string]int{}
	for _, vp := range set {
		inZone[vp.Zone]++
	}
	names := make(map[string]string, len(set))
	for _, vp := range set {
		names[vp.Shard] = vp.Shard
		if vp.Zone != "" && inZone[vp.Zone] == 1 {
			names[vp.Shard] = vp.Zone
		}
	}
	return names
}

// commonReason is the most common reason among entries, the earliest on
// ties.
func commonReason(entries []webcheckerv1alpha1.VantagePointStatus) string {
	counts := map[string]int{}
	best := ""
	for _, e := range entries {
		counts[e.Reason]++
		if counts[e.Reason] > counts[best] {
			best = e.Reason
		}
	}
	return best
}

// findEntry returns the entry of shard among entries, or nil.
func findEntry(entries []webcheckerv1alpha1.VantagePointStatus, shard string) *webcheckerv1alpha1.VantagePointStatus {
	for i := range entries {
		if entries[i].Shard == shard {
			return &entries[i]
		}
	}
	return nil
}

// entriesOf returns the entries of the vantage points in set, in the order
// of entries: those of replicas that left the set are dropped.
func entriesOf(entries []webcheckerv1alpha1.VantagePointStatus, set []VantagePoint) []webcheckerv1alpha1.VantagePointStatus {
	var kept []webcheckerv1alpha1.VantagePointStatus
	for _, e := range entries {
		for _, vp := range set {
			if vp.Shard == e.Shard {
				kept = append(kept, e)
				break
			}
		}
	}
	return kept
}
