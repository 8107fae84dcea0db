package sharding

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/sharding/ring"
)

// assignment is one immutable view of ownership: the ring of live members,
// and whether this replica is fenced. A fenced replica owns nothing.
type assignment struct {
	ring   *ring.Ring
	fenced bool
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
