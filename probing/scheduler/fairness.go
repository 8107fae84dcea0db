package scheduler

import "math"

// Fairness between namespaces: no namespace may hold more than its share
// of the bound on probes in flight at once (of the memory budget, and of
// Options.Workers when set), so that the checkers of one namespace whose
// targets hang cannot starve the others. The Scheduler's mutex guards
// namespaceSlots.

// namespaceLimit is the number of probes one namespace may hold at once
// when the number is bounded (Options.Workers): share of workers, rounded
// up, at least one. A tiny tolerance keeps
// products such as 0.7×10 (7.000000000000001 in floating point) from
// rounding up to the next slot.
func namespaceLimit(share float64, workers int) int {
	return max(1, int(math.Ceil(share*float64(workers)-1e-9)))
}

// namespaceSlots counts the probes each namespace holds in flight, and
// the bytes of the memory budget they hold, and keeps the due turns set
// aside because their namespace held its share.
//
// A turn set aside has left the heap (the dispatcher pops in due order and
// must not stop at a capped namespace, nor spin on it); until it is
// dispatched its check has no other turn queued. When a probe of the
// namespace ends the namespace becomes ready, and the dispatcher takes
// its oldest turn set aside before anything from the heap: it has been due
// longest.
type namespaceSlots struct {
	// limit is the number of probes a namespace may hold (0: no limit
	// by number); limitBytes the bytes of the budget it may hold. A
	// namespace that holds nothing may always start one probe.
	limit      int
	limitBytes int64
	// unlimited is set when the share is the whole bound (1).
	unlimited bool
	held      map[string]held
	// waiting holds, by namespace, the turns set aside, in the order they
	// came due. Some may be stale (the check was removed or changed since).
	waiting map[string][]job
	// ready are the namespaces with turns waiting and a probe ended since.
	ready map[string]struct{}
}

// held is what one namespace holds: probes and their bytes.
type held struct {
	probes int
	bytes  int64
}

func newNamespaceSlots(share float64, workers int, budget int64) namespaceSlots {
	n := namespaceSlots{
		limitBytes: int64(float64(budget) * share), unlimited: share >= 1,
		held: map[string]held{}, waiting: map[string][]job{}, ready: map[string]struct{}{},
	}
	if workers > 0 {
		n.limit = namespaceLimit(share, workers)
	}
	return n
}

// full reports whether ns holds all it may: one more probe of weight
// bytes would take it over its share. A share of the whole bound
// (unlimited) is never full: its probes wait for the bound itself.
func (n *namespaceSlots) full(ns string, weight int64) bool {
	h := n.held[ns]
	if n.unlimited || h.probes == 0 {
		return false
	}
	return (n.limit > 0 && h.probes >= n.limit) || h.bytes+weight > n.limitBytes
}

// take counts a probe of weight bytes started by ns.
func (n *namespaceSlots) take(ns string, weight int64) {
	h := n.held[ns]
	n.held[ns] = held{probes: h.probes + 1, bytes: h.bytes + weight}
}

// setAside keeps j, whose namespace is full, until a probe of it ends.
func (n *namespaceSlots) setAside(j job) {
	n.waiting[j.key.Namespace] = append(n.waiting[j.key.Namespace], j)
}

// release frees what a probe of ns of weight bytes held. It reports
// whether turns of ns are waiting for it, which is when the dispatcher
// must be woken.
func (n *namespaceSlots) release(ns string, weight int64) (wake bool) {
	h := n.held[ns]
	if h.probes <= 1 {
		delete(n.held, ns)
	} else {
		n.held[ns] = held{probes: h.probes - 1, bytes: h.bytes - weight}
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
		for len(n.waiting[ns]) > 0 && !n.full(ns, n.waiting[ns][0].weight) {
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
