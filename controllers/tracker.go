package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Tracker keeps, in memory, what the reconciler must remember about each
// checker between probes, and never writes it to the status (that would
// be a write per probe):
//
//   - the streak: how many consecutive probes of the current generation
//     had the same verdict (answered or not), for spec.failureThreshold and
//     spec.successThreshold. The scheduler notifies only a changed outcome,
//     so the Tracker, as the scheduler's Observer, sees every probe and
//     asks for a reconcile when a streak reaches its threshold;
//   - which outcome was held when another replica was found to have
//     written the status since (a take-over): that outcome is older than
//     what the status says and is never written.
//
// Run it with Start (it delivers the reconcile requests) and give it to the
// scheduler as an Observer (see scheduler.Observers). It is safe for concurrent use.
type Tracker struct {
	notify func(ctx context.Context, key types.NamespacedName)

	mu       sync.Mutex
	checkers map[types.NamespacedName]*tracked
	pending  map[types.NamespacedName]struct{}
	wake     chan struct{}
}

// tracked is what the Tracker knows of one checker.
type tracked struct {
	generation int64
	thresholds checkspec.Thresholds
	// answered is the verdict of the current streak, n its length.
	answered bool
	n        int
	// stale, when set, is the time of the outcome held at the last
	// take-over: that outcome is never written.
	stale time.Time
	// awaitingFresh asks for a reconcile at the first probe after a
	// take-over, which the scheduler does not notify when its outcome is
	// the same as the stale one.
	awaitingFresh bool
	// foreignRV is the resourceVersion of the latest copy found written by
	// another replica; wroteFromRV the one this replica's latest status
	// patch replaced. A copy with either was taken into account already.
	foreignRV, wroteFromRV string
	// firstAsked is when the reconciler first found no outcome of this
	// generation and no Ready condition stored (see pendingWait).
	firstAsked time.Time
	// holding is when the owner of a checker with several vantage points
	// first held back a write while a vantage point had not reported
	// (see holdWait); zero when it holds nothing back.
	holding time.Time
	// lastWrite is when this replica last wrote the checker's status or
	// its vantage point entry (see detailWait).
	lastWrite time.Time
}

var _ scheduler.Observer = (*Tracker)(nil)

// NewTracker returns a Tracker that asks for reconciles with notify (a
// Trigger's Notify).
func NewTracker(notify func(ctx context.Context, key types.NamespacedName)) *Tracker {
	return &Tracker{
		notify:   notify,
		checkers: map[types.NamespacedName]*tracked{},
		pending:  map[types.NamespacedName]struct{}{},
		wake:     make(chan struct{}, 1),
	}
}

// ProbeStarted implements scheduler.Observer; it does nothing.
func (t *Tracker) ProbeStarted(types.NamespacedName, time.Duration) {}

// ProbeFinished implements scheduler.Observer: it extends or restarts the
// checker's streak, and asks for a reconcile when the streak reaches its
// threshold (the scheduler already notified its first probe, a change)
// or when it is the first probe after a take-over. Probes of checkers the
// reconciler does not track are ignored, and so is the outcome a take-over
// made stale: it may reach the Tracker after the reconciler found it
// stale (it is told after the outcome is stored), and must neither count
// in the new streak nor pass for the first probe after the take-over. It
// never blocks.
func (t *Tracker) ProbeFinished(o scheduler.Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := o.Key
	c := t.checkers[key]
	if c == nil || (!c.stale.IsZero() && !o.Time.After(c.stale)) {
		// Not tracked, or the outcome a take-over made stale.
		return
	}
	answered := o.Result.Success
	if c.n > 0 && c.answered == answered {
		c.n++
	} else {
		c.answered, c.n = answered, 1
	}
	threshold := c.thresholds.Failure
	if answered {
		threshold = c.thresholds.Success
	}
	if (c.n == threshold && threshold > 1) || c.awaitingFresh {
		c.awaitingFresh = false
		t.pending[key] = struct{}{}
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// track starts tracking the checker at generation with thresholds, or
// updates its thresholds; a new generation starts a new streak. Call it
// after the check is upserted into the scheduler: the scheduler never
// reports a probe of an older generation after that.
func (t *Tracker) track(key types.NamespacedName, generation int64, thresholds checkspec.Thresholds) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[key]
	if c == nil || c.generation != generation {
		c = &tracked{generation: generation}
		t.checkers[key] = c
	}
	c.thresholds = thresholds
}

// pendingWait is how much longer the reconciler waits before it writes
// Pending for the checker, which has no outcome of its current generation
// and no Ready condition stored: the grace from the first time it asked
// (at now), zero once that has passed or when the checker is not tracked.
func (t *Tracker) pendingWait(key types.NamespacedName, now time.Time, grace time.Duration) time.Duration {
	return t.waitFrom(key, func(c *tracked) *time.Time { return &c.firstAsked }, now, grace)
}

// waitFrom is what is left of d at now, counted from the instant that
// field picks in the checker's record, which the first call sets to now;
// zero when the checker is not tracked.
func (t *Tracker) waitFrom(key types.NamespacedName, field func(*tracked) *time.Time, now time.Time, d time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[key]
	if c == nil {
		return 0
	}
	from := field(c)
	if from.IsZero() {
		*from = now
	}
	return max(0, from.Add(d).Sub(now))
}

// holdWait is how much longer the owner of the checker may hold back a
// status write that changes no Ready status while one of its vantage
// points has not reported yet (at now): what is left of hold from the
// first time it held one back, zero once that has passed or when the
// checker is not tracked. Call holdDone once every vantage point has
// reported.
func (t *Tracker) holdWait(key types.NamespacedName, now time.Time, hold time.Duration) time.Duration {
	return t.waitFrom(key, func(c *tracked) *time.Time { return &c.holding }, now, hold)
}

// holdDone ends what holdWait measures: the next write held back waits
// the whole hold again.
func (t *Tracker) holdDone(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.checkers[key]; c != nil {
		c.holding = time.Time{}
	}
}

// forget stops tracking the checker (deleted, or no longer owned).
func (t *Tracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.checkers, key)
}

// disowned is called when this replica does not own the checker (any
// more): the scheduler forgot its outcome, so the streak, and what a
// take-over made stale, start over if it comes back.
func (t *Tracker) disowned(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.checkers[key]; c != nil {
		c.n, c.stale, c.awaitingFresh = 0, time.Time{}, false
	}
}

// foreignStatus is called when the stored status of the checker, at
// resourceVersion rv, names another replica: someone else wrote it after
// this replica's outcomes, or never this replica. Unless that copy was
// seen already, or is the one this replica's own latest patch replaced
// (the cache lags), the streak starts over from the stored condition, and
// held (the outcome the scheduler holds now, nil for none) is stale.
func (t *Tracker) foreignStatus(key types.NamespacedName, rv string, held *scheduler.Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[key]
	if c == nil || rv == c.foreignRV || rv == c.wroteFromRV {
		return
	}
	c.foreignRV, c.n = rv, 0
	if held != nil {
		c.stale, c.awaitingFresh = held.Time, true
	}
}

// wrote records that this replica patched the checker's status, replacing
// the copy at resourceVersion rv.
func (t *Tracker) wrote(key types.NamespacedName, rv string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.checkers[key]; c != nil {
		c.wroteFromRV = rv
	}
}

// wroteAt records that this replica wrote the checker's status, or its
// vantage point entry, at now.
func (t *Tracker) wroteAt(key types.NamespacedName, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.checkers[key]; c != nil {
		c.lastWrite = now
	}
}

// detailWait is how much longer, at now, a write of the checker that
// changes only details waits: what is left of period since this replica
// last wrote it, zero when it never did or the checker is not tracked.
func (t *Tracker) detailWait(key types.NamespacedName, now time.Time, period time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[key]
	if c == nil || c.lastWrite.IsZero() {
		return 0
	}
	return max(0, c.lastWrite.Add(period).Sub(now))
}

// behindOwnWrite reports whether rv, the resourceVersion of the copy of
// the checker the reconciler just read from the cache, is the one this
// replica's latest status patch replaced: the cache has not seen that
// write yet, and a status computed against it could look unchanged when it
// is not (a success after a written failure would never be written).
func (t *Tracker) behindOwnWrite(key types.NamespacedName, rv string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[key]
	return c != nil && c.wroteFromRV != "" && c.wroteFromRV == rv
}

// streak returns how many consecutive probes, o's included, reached o's
// verdict, and whether o is stale (held at a take-over). The latest
// outcome always counts as one: a probe the Tracker has not seen yet (it
// is told right after the outcome is stored) is not lost.
func (t *Tracker) streak(o *scheduler.Outcome) (n int, stale bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[o.Key]
	if c == nil {
		return 1, false
	}
	if !c.stale.IsZero() && !o.Time.After(c.stale) {
		return 0, true
	}
	if c.n == 0 || c.answered != o.Result.Success {
		return 1, false
	}
	return c.n, false
}

// NeedLeaderElection returns false: every replica tracks the checkers it
// owns.
func (t *Tracker) NeedLeaderElection() bool { return false }

// Start delivers the reconcile requests of ProbeFinished until ctx is done;
// it implements controller-runtime's manager.Runnable.
func (t *Tracker) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.wake:
		}
		t.mu.Lock()
		keys := make([]types.NamespacedName, 0, len(t.pending))
		for key := range t.pending {
			keys = append(keys, key)
		}
		clear(t.pending)
		t.mu.Unlock()
		for _, key := range keys {
			t.notify(ctx, key)
		}
	}
}
