package sharding

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/sharding/ring"
)

// assignment is one immutable view of ownership: the ring of live members,
// their zones, and whether this replica is fenced. A fenced replica owns
// nothing and is no checker's vantage point.
type assignment struct {
	ring *ring.Ring
	// zones holds the zone of every live member whose zone is known, as
	// its Lease says (membership.Zones); nil when none is known. It is
	// never modified.
	zones  map[string]string
	fenced bool
	// at is when the assignment was published, on the Assigner's clock.
	at time.Time
	// leftAt is, when the ring's members last changed because members
	// left at the instants they announced (membership.AnnotationLeavingAt),
	// the latest of those instants; zero otherwise. leftFrom is the ring
	// before they left. A member that leaves probes every turn due before
	// its instant, however late this replica publishes the change: see
	// ownsTurn.
	leftAt   time.Time
	leftFrom *ring.Ring
}

func (a *assignment) owns(id string, key types.NamespacedName) bool {
	return !a.fenced && a.ring.Owner(ring.Key(key.Namespace, key.Name)) == id
}

// ownsTurn reports whether replica id probes the turn of key due at due
// under a: it owns key, and the turn is not due before members left at
// the instants they announced while id did not own key then. Such a turn
// belongs to the member that left, which probes every turn due before its
// instant, even when this replica's dispatcher reaches it late, after the
// change was published.
func (a *assignment) ownsTurn(id string, key types.NamespacedName, due time.Time) bool {
	if !a.owns(id, key) {
		return false
	}
	return a.leftFrom == nil || !due.Before(a.leftAt) || a.leftFrom.Owner(ring.Key(key.Namespace, key.Name)) == id
}

// zoneOf returns member's zone, "" when unknown.
func (a *assignment) zoneOf(member string) string { return a.zones[member] }

// vantagePoints returns the members that probe key when it asks for k
// vantage points (k < 1 meaning 1), owner first, whether or not this
// replica is fenced (see ring.Ring.VantagePoints).
func (a *assignment) vantagePoints(key types.NamespacedName, k int) []string {
	zoneOf := a.zoneOf
	if len(a.zones) == 0 {
		zoneOf = nil // every member in the unknown zone: the same sets, faster
	}
	return a.ring.VantagePoints(ring.Key(key.Namespace, key.Name), max(k, 1), zoneOf)
}

// probes reports whether replica id probes key, which asks for k vantage
// points, under a: it is not fenced and one of them. For k <= 1 it is owns,
// at the cost of owns.
func (a *assignment) probes(id string, key types.NamespacedName, k int) bool {
	if k <= 1 {
		return a.owns(id, key)
	}
	return a.set(id, key, k) != nil
}

// set returns the vantage points of key (asking for k > 1) under a if
// replica id is one of them and a is not fenced, else nil.
func (a *assignment) set(id string, key types.NamespacedName, k int) []string {
	if a.fenced || !a.ring.Contains(id) {
		return nil
	}
	if s := a.vantagePoints(key, k); slices.Contains(s, id) {
		return s
	}
	return nil
}

// ownershipChanges returns, among checkers, those that replica id probes
// under after but not under before (gained), those it probed under before
// but no longer does under after (lost), and those it probes under both
// whose vantage points, as an ordered list, differ (regrouped: members
// left or joined the set, or its owner changed), each in the order of
// checkers. A fenced replica probes nothing. For a checker with one
// vantage point (VantagePoints <= 1) this is a change of owner, decided
// with ring.Ring.Owner alone, and it is never regrouped. It is the
// Assigner's decision of which checkers moved, free of clocks, caches and
// callbacks.
func ownershipChanges(before, after *assignment, id string, checkers []Checker) (gained, lost, regrouped []Checker) {
	for _, c := range checkers {
		if c.VantagePoints <= 1 {
			was, is := before.owns(id, c.Key), after.owns(id, c.Key)
			switch {
			case is && !was:
				gained = append(gained, c)
			case was && !is:
				lost = append(lost, c)
			}
			continue
		}
		was, is := before.set(id, c.Key, c.VantagePoints), after.set(id, c.Key, c.VantagePoints)
		switch {
		case is != nil && was == nil:
			gained = append(gained, c)
		case was != nil && is == nil:
			lost = append(lost, c)
		case was != nil && !slices.Equal(was, is):
			regrouped = append(regrouped, c)
		}
	}
	return gained, lost, regrouped
}

// handOverSlack is how long before this replica saw a change of ownership
// the previous owner may have stopped probing, when nothing tells better:
// shutting down, it stops right before it deletes its Lease, which the
// other replicas see a request and a watch event later; crashing, it may
// die right after a renewal that this replica sees a request, a watch
// event and a ring evaluation later (tens of milliseconds, up to a few
// hundred on a busy replica), after a turn it then never probed. (A Lease
// released by a replica that knew when it stopped tells better: see
// membership.AnnotationProbingStopped.) It adds to how long a gained
// check may go unprobed without a turn made up, so it must stay within
// the 2 s beyond interval + lease duration that a crash is promised.
const handOverSlack = time.Second

// leftMembers is what this replica knows of the members that may have
// left the ring: by id, when each member that announced it was leaving
// left (see membership.AnnotationLeavingAt), when it last saw the Lease of
// each member whose Lease still exists change (on this replica's clock),
// and when each member that released its Lease on shutdown stopped probing
// (on its own clock: an instant of the checkers' grids, see
// membership.AnnotationProbingStopped).
type leftMembers struct {
	leaving, lastSeen, released map[string]time.Time
}

// ownLease is what a replica knows of its own Lease.
type ownLease struct {
	// acquired is when the replica acquired it, on its own clock.
	acquired time.Time
	// duration is its lease duration.
	duration time.Duration
}

// unprobedSince is, for a checker that replica id gains going from before
// to after (decided at now), the earliest moment from which its previous
// owner may have stopped probing it: a turn this replica skipped since then
// may have been probed by nobody, and may need making up (see
// scheduler.Scheduler.Gained). left tells what is known of the members
// that may have left (see leftMembers). Zero means
// nothing can have been missed: nobody owned the checker before (this
// replica is starting). The tolerance returned is the longer gap the
// hand-over may cost without a turn being made up: for a replica that
// joins or comes back, its lease duration (a crash costs as much), so
// that it does not probe again what a member that had not yet seen it
// probed; none when it takes over from a member that left.
func unprobedSince(before *assignment, id string, key types.NamespacedName, after *assignment, left leftMembers, own ownLease, now time.Time) (time.Time, time.Duration) {
	prev := before.ring.Owner(ring.Key(key.Namespace, key.Name))
	switch {
	case prev == "":
		return time.Time{}, 0
	case prev == id:
		// This replica itself, fenced since before was published (or
		// starting with its Lease already seen): as for a join, the others
		// may have probed its checkers until they saw it back.
		return before.at, own.duration
	case after.ring.Contains(prev):
		// A member that stays: this replica joined, or came back. The
		// member stops probing when it sees this replica's Lease, which
		// nobody saw before this replica acquired it, nor live again
		// before this replica fenced itself, if it had. Both moments are
		// on this replica's clock; a guess only when they are unknown.
		since := own.acquired
		if before.fenced && before.at.After(since) {
			since = before.at
		}
		if since.IsZero() || since.After(now) {
			return now.Add(-handOverSlack), own.duration
		}
		return since, own.duration
	default:
		// A member that left. One that announced when it would leave
		// probed every turn due before that instant, none after. Else, with
		// its Lease still there it expired: the member may have died any
		// time after its last renewal seen here. Without, it deleted its
		// Lease right after it stopped probing, and may have written when
		// it did: every turn due before that instant was probed, none
		// after.
		if at, ok := left.leaving[prev]; ok {
			return at, 0
		}
		if seen, ok := left.lastSeen[prev]; ok {
			// Seen here a request, a watch event and an evaluation after
			// the member wrote it: it may have died before this replica
			// saw it, and missed a turn due in between.
			return seen.Add(-handOverSlack), 0
		}
		if stopped, ok := left.released[prev]; ok {
			return stopped, 0
		}
		return now.Add(-handOverSlack), 0
	}
}
