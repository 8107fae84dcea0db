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
// the previous owner may have stopped probing: it stops when it sees the
// change itself (or, shutting down, right before it deletes its Lease),
// which other replicas see a watch event later.
const handOverSlack = time.Second

// unprobedSince is, for a checker that replica id gains going from before
// to after (decided at now), the earliest moment from which its previous
// owner may have stopped probing it: a turn this replica skipped since then
// may have been probed by nobody, and is made up at once (see
// scheduler.Scheduler.Gained). lastSeen holds, for every member whose
// Lease still exists, when this replica last saw it change. Zero means
// nothing can have been missed: nobody owned the checker before (this
// replica is starting).
func unprobedSince(before *assignment, id string, key types.NamespacedName, after *assignment, lastSeen map[string]time.Time, now time.Time) time.Time {
	prev := before.ring.Owner(ring.Key(key.Namespace, key.Name))
	switch {
	case prev == "":
		return time.Time{}
	case prev == id:
		// This replica itself, fenced since before was published.
		return before.at
	case after.ring.Contains(prev):
		// A member that stays (this replica joined, or the ring moved):
		// it stops probing when it sees the new ring.
		return now.Add(-handOverSlack)
	default:
		// A member that left. With its Lease still there it expired: the
		// member may have died any time after its last renewal seen here.
		// Without, it deleted its Lease right after it stopped probing.
		if seen, ok := lastSeen[prev]; ok {
			return seen
		}
		return now.Add(-handOverSlack)
	}
}
