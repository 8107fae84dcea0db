package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing/scheduler"
)

// ledger is what the reconciler remembers in memory about each checker's
// status writes, beside the probe facts the scheduler keeps (outcomes and
// their streaks): which copies of the status it wrote or found written by
// another replica, since when it has been waiting to write (the Pending
// grace, the quorum hold-back, the message period), and which changes of
// its target it recorded an Event of, and when (see targetChange).
// Nothing of it is written to the status, and it does not survive a
// restart: a replica that starts over starts from the stored status.
//
// Every record is of one generation of its checker: a new generation
// starts a new record. It is safe for concurrent use.
type ledger struct {
	mu      sync.Mutex
	records map[types.NamespacedName]*record
}

// record is what the ledger knows of one checker.
type record struct {
	generation int64
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
	// pace is the pace of the checker's probes last reported (see
	// reportPace).
	pace pace
	// renameHeld is true once a write that only renames status.shard was
	// put behind the others, until this replica writes the status (see
	// holdRename).
	renameHeld bool
	// changeSeq is the number of the latest change of the checker's target
	// taken into account, heldChange the changes not recorded yet (folded
	// into one, nil for none) and changeRecorded when the latest
	// TargetChanged Event was recorded (see targetChange).
	changeSeq      uint64
	heldChange     *scheduler.TargetChange
	changeRecorded time.Time
}

func newLedger() *ledger {
	return &ledger{records: map[types.NamespacedName]*record{}}
}

// of returns the record of the checker at generation, making a new one
// when there is none of that generation. Call it with l.mu held.
func (l *ledger) of(key types.NamespacedName, generation int64) *record {
	c := l.records[key]
	if c == nil || c.generation != generation {
		c = &record{generation: generation}
		l.records[key] = c
	}
	return c
}

// foreignCopy reports whether rv, the resourceVersion of a copy of the
// checker whose status another replica wrote, is new to this replica:
// neither found before nor the one its own latest patch replaced (the
// cache lags). The copy is then taken into account: the next calls with
// rv report false.
func (l *ledger) foreignCopy(key types.NamespacedName, generation int64, rv string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.of(key, generation)
	if rv == c.foreignRV || rv == c.wroteFromRV {
		return false
	}
	c.foreignRV = rv
	return true
}

// wrote records that this replica wrote the checker's status, or its
// vantage point entry, at now, replacing the copy at resourceVersion rv.
func (l *ledger) wrote(key types.NamespacedName, generation int64, rv string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.of(key, generation)
	c.wroteFromRV, c.lastWrite, c.renameHeld = rv, now, false
}

// behindOwnWrite reports whether rv, the resourceVersion of the copy of
// the checker the reconciler just read from the cache, is the one this
// replica's latest status patch replaced: the cache has not seen that
// write yet, and a status computed against it could look unchanged when it
// is not (a success after a written failure would never be written).
func (l *ledger) behindOwnWrite(key types.NamespacedName, rv string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.records[key]
	return c != nil && c.wroteFromRV != "" && c.wroteFromRV == rv
}

// pendingWait is how much longer, at now, the reconciler waits before it
// writes Pending for the checker, which has no outcome of its current
// generation and no Ready condition stored: what is left of grace from the
// first time it asked, zero once that has passed.
func (l *ledger) pendingWait(key types.NamespacedName, generation int64, now time.Time, grace time.Duration) time.Duration {
	return l.waitFrom(key, generation, func(c *record) *time.Time { return &c.firstAsked }, now, grace)
}

// holdWait is how much longer, at now, the owner of the checker may hold
// back a status write that changes no Ready status while one of its
// vantage points has not reported yet: what is left of hold from the first
// time it held one back, zero once that has passed. Call holdDone once
// every vantage point has reported.
func (l *ledger) holdWait(key types.NamespacedName, generation int64, now time.Time, hold time.Duration) time.Duration {
	return l.waitFrom(key, generation, func(c *record) *time.Time { return &c.holding }, now, hold)
}

// waitFrom is what is left of d at now, counted from the instant that
// field picks in the checker's record, which the first call sets to now.
func (l *ledger) waitFrom(key types.NamespacedName, generation int64, field func(*record) *time.Time, now time.Time, d time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := field(l.of(key, generation))
	if from.IsZero() {
		*from = now
	}
	return max(0, from.Add(d).Sub(now))
}

// holdDone ends what holdWait measures: the next write held back waits
// the whole hold again.
func (l *ledger) holdDone(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.records[key]; c != nil {
		c.holding = time.Time{}
	}
}

// detailWait is how much longer, at now, a write of the checker that
// changes only details waits: what is left of period since this replica
// last wrote it at generation, zero when it never did.
func (l *ledger) detailWait(key types.NamespacedName, generation int64, now time.Time, period time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.records[key]
	if c == nil || c.generation != generation || c.lastWrite.IsZero() {
		return 0
	}
	return max(0, c.lastWrite.Add(period).Sub(now))
}

// forget drops the checker's record (deleted, suspended, or no longer
// served).
func (l *ledger) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.records, key)
}
