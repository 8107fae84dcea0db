package scheduler

import (
	"container/heap"
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The scheduler's state: an entry per check, a flight per probe running,
// and the due-time heap. The Scheduler's mutex guards all of them.

// entry is the state of one check. It is replaced, not mutated, when the
// check changes, so that a new revision starts from a clean state.
type entry struct {
	check    Check
	interval time.Duration // effective, > 0
	offset   time.Duration // phase within the interval, in [0, interval)
	rev      uint64
	// parked is set when the check came due while a cancelled probe of an
	// older revision was still running; that probe's worker re-queues it.
	parked bool
	// skipped is the due time of the latest turn on the grid skipped
	// because this replica did not own the check (zero when none).
	skipped time.Time
	// onGrid is set when the check's queued turn is a grid point, not its
	// first probe after an Upsert or a catch-up after Gained.
	onGrid     bool
	outcome    Outcome
	hasOutcome bool
	// counts is carried over from the entry this one replaced.
	counts ProbeCounts
}

// flight is a probe in flight.
type flight struct {
	rev    uint64 // revision of the check the probe was started for
	cancel context.CancelFunc
}

// item is one element of the due-time heap. It is stale when its key is gone
// or its revision is no longer the check's current revision.
type item struct {
	due time.Time
	key types.NamespacedName
	rev uint64
}

// dueQueue is a min-heap of items by due time. Use push and pop; the
// methods below are for container/heap.
type dueQueue []item

// push adds the item (due, key, rev). It reports whether the item is due
// before every item that was queued, which is when the dispatcher must be
// woken to see it.
func (q *dueQueue) push(due time.Time, key types.NamespacedName, rev uint64) (earliest bool) {
	earliest = len(*q) == 0 || due.Before((*q)[0].due)
	heap.Push(q, item{due: due, key: key, rev: rev})
	return earliest
}

// pop removes the earliest item.
func (q *dueQueue) pop() { heap.Pop(q) }

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(item)) }
func (q *dueQueue) Pop() any {
	old := *q
	n := len(old) - 1
	it := old[n]
	old[n] = item{}
	*q = old[:n]
	return it
}
