package scheduler

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The scheduler's state: an entry per check, a flight per probe running,
// and the due-time heap. The Scheduler's mutex guards all of them.

// entry is the state of one check. It is replaced, not mutated, when the
// check changes, so that a new revision starts from a clean state.
//
// Every replica keeps an entry for every check (a hand-over waits for
// nothing), so its size is memory per check: the outcome, which only the
// checks this replica probes have, is kept apart.
type entry struct {
	check  Check
	offset time.Duration // phase within the interval, in [0, interval)
	rev    uint64
	// weight is the bytes of the memory budget a probe of the check
	// holds in flight (InFlightBytes of its target, at most the budget).
	weight int64
	// skipped is the due time of the latest turn skipped because this
	// replica did not own the check, since its latest probe started (zero
	// when none).
	skipped time.Time
	// outcome is that of the latest probe of this revision, nil before
	// the first one.
	outcome *Outcome
	// counts is carried over from the entry this one replaced.
	counts ProbeCounts
	// pace is when the latest probe that started late, and the latest that
	// overran, were started; nil until one did (see setPace).
	pace *pace
	// target is what the probes of this revision saw of the check's
	// target (see watchTarget), nil before one saw anything; it is
	// forgotten with the outcome.
	target *targetState
	// probed is set once an outcome is stored, and cleared by Disown: the
	// check was probed here since this replica last gained it. TakeOver
	// forgets the outcome but not that (see Gained).
	probed bool
	// parked is set when the check came due while a cancelled probe of an
	// older revision was still running; that probe's worker re-queues it.
	parked bool
	// onGrid is set when the check's queued turn is a grid point, not its
	// first probe after an Upsert or a catch-up after Gained.
	onGrid bool
}

// pace is when the latest probe of a check that started late (behindAt)
// and the latest that overran (overranAt) were started, zero for none. It
// is kept apart from the entry, which every replica holds for every
// check, since only the checks probed late or overrunning have one.
type pace struct {
	behindAt, overranAt time.Time
}

// interval is the time between two turns of e's check: its Interval, or
// FallbackInterval when that is not positive.
func (e *entry) interval() time.Duration {
	return effectiveInterval(e.check.Interval)
}

// effectiveInterval is interval, or FallbackInterval when interval is not
// positive.
func effectiveInterval(interval time.Duration) time.Duration {
	if interval <= 0 {
		return FallbackInterval
	}
	return interval
}

// PaceHold is how many intervals Outcome.Behind and Outcome.Overran stay
// set after the latest probe of the check that started late or overran:
// a check at the edge of either then reports it steadily, with one
// notification (and one Event) when it starts and one when it has been
// kept for that long, instead of one at every other probe.
const PaceHold = 3

// setPace sets o's Behind and Overran for the probe started at start,
// which started late (behind) and overran (a turn was skipped while it
// ran) as told: each holds while a probe of the check that did was
// started less than PaceHold intervals before start.
func (e *entry) setPace(o *Outcome, start time.Time, behind, overran bool) {
	if (behind || overran) && e.pace == nil {
		e.pace = &pace{}
	}
	if e.pace == nil {
		o.Behind, o.Overran = false, false
		return
	}
	if behind {
		e.pace.behindAt = start
	}
	if overran {
		e.pace.overranAt = start
	}
	hold := PaceHold * e.interval()
	o.Behind = !e.pace.behindAt.IsZero() && start.Sub(e.pace.behindAt) < hold
	o.Overran = !e.pace.overranAt.IsZero() && start.Sub(e.pace.overranAt) < hold
}

// setOutcome stores o as the latest outcome, extending or restarting the
// streak and the failure window of the one before it, and reports whether
// it must be notified: it is the first, it differs (see
// Outcome.changedFrom), its streak just reached the threshold of its
// verdict, or it changed the verdict of the check's window. It sets o's
// Streak and Recent.
func (e *entry) setOutcome(o *Outcome) (notify bool) {
	e.probed = true
	o.Streak = 1
	w := e.check.Thresholds.Window
	if e.outcome == nil {
		o.Recent = w.record(Recent{}, o.Result)
		e.outcome = new(*o)
		return true
	}
	prev := *e.outcome
	if prev.Result.Success == o.Result.Success {
		o.Streak = prev.Streak + 1
	}
	o.Recent = w.record(prev.Recent, o.Result)
	*e.outcome = *o
	return o.changedFrom(prev) || o.Streak == e.check.Thresholds.For(o.Result.Success) || w.Judge(o.Recent) != w.Judge(prev.Recent)
}

// latest returns the latest outcome, and false when there is none.
func (e *entry) latest() (Outcome, bool) {
	if e.outcome == nil {
		return Outcome{}, false
	}
	return *e.outcome, true
}

// flight is a probe in flight.
type flight struct {
	rev    uint64 // revision of the check the probe was started for
	cancel context.CancelFunc
	// overran is set when a turn of the check was skipped because this
	// probe still ran (Outcome.Overran).
	overran bool
	// discarded is set by a Disown after the dispatcher stopped: the probe
	// goes on for StopGrace, its turn being started, but its result is
	// not stored.
	discarded bool
}

// item is one element of the due-time heap. It is stale when its key is gone
// or its revision is no longer the check's current revision.
type item struct {
	due time.Time
	key types.NamespacedName
	rev uint64
}

// dueQueue is a binary min-heap of items by due time, kept with push and
// pop. It is typed rather than a container/heap.Interface: that boxes every
// item pushed or popped into an interface, two allocations per probe.
type dueQueue []item

// push adds the item (due, key, rev). It reports whether the item is due
// before every item that was queued, which is when the dispatcher must be
// woken to see it.
func (q *dueQueue) push(due time.Time, key types.NamespacedName, rev uint64) (earliest bool) {
	earliest = len(*q) == 0 || due.Before((*q)[0].due)
	*q = append(*q, item{due: due, key: key, rev: rev})
	q.up(len(*q) - 1)
	return earliest
}

// pop removes the earliest item; the queue must not be empty.
func (q *dueQueue) pop() {
	old := *q
	n := len(old) - 1
	old[0] = old[n]
	old[n] = item{} // no key kept alive by the spare capacity
	*q = old[:n]
	q.down(0)
}

// up moves the item at j towards the root until its parent is not due
// after it.
func (q dueQueue) up(j int) {
	for j > 0 {
		parent := (j - 1) / 2
		if !q[j].due.Before(q[parent].due) {
			return
		}
		q[parent], q[j] = q[j], q[parent]
		j = parent
	}
}

// down moves the item at i towards the leaves until neither child is due
// before it.
func (q dueQueue) down(i int) {
	for {
		child := 2*i + 1
		if child >= len(q) {
			return
		}
		if right := child + 1; right < len(q) && q[right].due.Before(q[child].due) {
			child = right
		}
		if !q[child].due.Before(q[i].due) {
			return
		}
		q[i], q[child] = q[child], q[i]
		i = child
	}
}
