package sharding

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/networkio/webchecker/sharding/membership"
)

// releases remembers, for the members that released their Lease on
// shutdown, the instant from which they started no probe, as their deleted
// Lease carries it (membership.ProbingStoppedAt): the checkers they leave
// are taken over from exactly there (see unprobedSince). The lease
// informer's handler notes a deletion before it wakes the Assigner, so the
// evaluation that finds the member gone knows it. It is safe for
// concurrent use.
type releases struct {
	mu   sync.Mutex
	byID map[string]release
}

// release is one member's release: when it stopped probing (its clock),
// and when this replica saw its Lease deleted (this replica's clock).
type release struct {
	stoppedAt, seen time.Time
}

// noteDeleted records the release of a deleted Lease (obj, as an informer
// hands it to a delete handler) seen at now, if the Lease carries when its
// replica stopped probing.
func (r *releases) noteDeleted(obj any, now time.Time) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	at, ok := membership.ProbingStoppedAt(l)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]release{}
	}
	r.byID[l.Name] = release{stoppedAt: at, seen: now}
}

// stoppedAt returns, by member, when each released member stopped probing.
// It first forgets the releases seen before forgetBefore, and those of the
// members whose Lease exists again (present): a member that comes back and
// leaves again is noted again.
func (r *releases) stoppedAt(present []coordinationv1.Lease, forgetBefore time.Time) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range present {
		delete(r.byID, present[i].Name)
	}
	out := make(map[string]time.Time, len(r.byID))
	for id, rel := range r.byID {
		if rel.seen.Before(forgetBefore) {
			delete(r.byID, id)
			continue
		}
		out[id] = rel.stoppedAt
	}
	return out
}
