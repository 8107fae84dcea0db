package sharding

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/sharding/ring"
)

// assignment is one immutable view of ownership: the ring of live members,
// and whether this replica is fenced. A fenced replica owns nothing.
type assignment struct {
	ring   *ring.Ring
	fenced bool
	// at is when the assignment was published, on the Assigner's clock.
	at time.Time
}

func (a *assignment) owns(id string, key types.NamespacedName) bool {
	return !a.fenced && a.ring.Owner(ring.Key(key.Namespace, key.Name)) == id
}

// ownershipChanges returns, among keys, those that replica id owns under
// after but not under before (gained), and those it owned under before but
// no longer does under after (lost), each in the order of keys. It is the
// Assigner's decision of which checkers moved, free of clocks, caches and
// callbacks.
func ownershipChanges(before, after *assignment, id string, keys []types.NamespacedName) (gained, lost []types.NamespacedName) {
	for _, key := range keys {
		was, is := before.owns(id, key), after.owns(id, key)
		switch {
		case is && !was:
			gained = append(gained, key)
		case was && !is:
			lost = append(lost, key)
		}
	}
	return gained, lost
}

// handOverSlack is how long before this replica saw a change of ownership
// the previous owner may have stopped probing, when nothing tells better:
// shutting down, it stops right before it deletes its Lease, which the
// other replicas see a request and a watch event later.
const handOverSlack = time.Second

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
// scheduler.Scheduler.Gained). lastSeen holds, for every member whose
// Lease still exists, when this replica last saw it change. Zero means
// nothing can have been missed: nobody owned the checker before (this
// replica is starting). The tolerance returned is the longer gap the
// hand-over may cost without a turn being made up: for a replica that
// joins or comes back, its lease duration (a crash costs as much), so
// that it does not probe again what a member that had not yet seen it
// probed; none when it takes over from a member that left.
func unprobedSince(before *assignment, id string, key types.NamespacedName, after *assignment, lastSeen map[string]time.Time, own ownLease, now time.Time) (time.Time, time.Duration) {
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
		// A member that left. With its Lease still there it expired: the
		// member may have died any time after its last renewal seen here.
		// Without, it deleted its Lease right after it stopped probing.
		if seen, ok := lastSeen[prev]; ok {
			return seen, 0
		}
		return now.Add(-handOverSlack), 0
	}
}
