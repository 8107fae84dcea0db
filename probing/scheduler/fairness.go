package scheduler

import "math"

// Fairness between namespaces: no namespace may hold more than its share
// of the worker pool at once, so that the checkers of one namespace whose
// targets hang cannot starve the others. The Scheduler's mutex guards
// namespaceSlots.

// namespaceLimit is the number of probe slots one namespace may hold at
// once: share of workers, rounded up, at least one. A tiny tolerance keeps
// products such as 0.7×10 (7.000000000000001 in floating point) from
// rounding up to the next slot.
func namespaceLimit(share float64, workers int) int {
	return max(1, int(math.Ceil(share*float64(workers)-1e-9)))
}

// namespaceSlots counts the probe slots each namespace holds and keeps the
// due turns set aside because their namespace held all its slots.
//
// A turn set aside has left the heap (the dispatcher pops in due order and
// must not stop at a capped namespace, nor spin on it); until it is
// dispatched its check has no other turn queued. When a slot of the
// namespace is freed the namespace becomes ready, and the dispatcher takes
// its oldest turn set aside before anything from the heap: it has been due
// longest.
type namespaceSlots struct {
	limit int
	held  map[string]int
	// waiting holds, by namespace, the turns set aside, in the order they
	// came due. Some may be stale (the check was removed or changed since).
	waiting map[string][]job
	// ready are the namespaces with turns waiting and a slot free.
	ready map[string]struct{}
}

func newNamespaceSlots(limit int) namespaceSlots {
	return namespaceSlots{limit: limit, held: map[string]int{}, waiting: map[string][]job{}, ready: map[string]struct{}{}}
}

// full reports whether ns holds all the slots it may.
func (n *namespaceSlots) full(ns string) bool { return n.held[ns] >= n.limit }

// take counts a slot taken by ns.
func (n *namespaceSlots) take(ns string) { n.held[ns]++ }

// setAside keeps j, whose namespace is full, until a slot of it is freed.
func (n *namespaceSlots) setAside(j job) {
	n.waiting[j.key.Namespace] = append(n.waiting[j.key.Namespace], j)
}

// release frees a slot of ns. It reports whether turns of ns are waiting
// for it, which is when the dispatcher must be woken.
func (n *namespaceSlots) release(ns string) (wake bool) {
	if n.held[ns]--; n.held[ns] <= 0 {
		delete(n.held, ns)
	}
	if len(n.waiting[ns]) == 0 {
		return false
	}
	n.ready[ns] = struct{}{}
	return true
}

// nextWaiting removes and returns a waiting turn of a ready namespace (the
// oldest of that namespace) for which current is true; stale turns on the
// way are dropped. A namespace that is full again, or has nothing left waiting, is
// no longer ready.
func (n *namespaceSlots) nextWaiting(current func(job) bool) (job, bool) {
	for ns := range n.ready {
		for !n.full(ns) && len(n.waiting[ns]) > 0 {
			q := n.waiting[ns]
			j := q[0]
			q[0] = job{}
			n.waiting[ns] = q[1:]
			if current(j) {
				return j, true
			}
		}
		if len(n.waiting[ns]) == 0 {
			delete(n.waiting, ns)
		}
		delete(n.ready, ns)
	}
	return job{}, false
}
