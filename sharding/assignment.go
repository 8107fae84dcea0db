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

// unprobedSince is, for a checker that replica id gains going from before
// to after (decided at now), the earliest moment from which its previous
// owner may have stopped probing it: a turn this replica skipped since then
// may have been probed by nobody, and may need making up (see
// scheduler.Scheduler.Gained). lastSeen holds, for every member whose
// Lease still exists, when this replica last saw it change; acquired is
// when this replica acquired its own Lease (zero if unknown). Zero means
// nothing can have been missed: nobody owned the checker before (this
// replica is starting).
func unprobedSince(before *assignment, id string, key types.NamespacedName, after *assignment, lastSeen map[string]time.Time, acquired, now time.Time) time.Time {
	prev := before.ring.Owner(ring.Key(key.Namespace, key.Name))
	switch {
	case prev == "":
		return time.Time{}
	case prev == id:
		// This replica itself, fenced since before was published.
		return before.at
	case after.ring.Contains(prev):
		// A member that stays: this replica joined, or came back. The
		// member stops probing when it sees this replica's Lease, which
		// nobody saw before this replica acquired it, nor live again
		// before this replica fenced itself, if it had. Both moments are
		// on this replica's clock; a guess only when they are unknown.
		since := acquired
		if before.fenced && before.at.After(since) {
			since = before.at
		}
		if since.IsZero() || since.After(now) {
			return now.Add(-handOverSlack)
		}
		return since
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
