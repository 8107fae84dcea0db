package scheduler

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// What the scheduler does when this replica's ownership of a check
// changes; every replica keeps every check scheduled, and Options.Owns
// decides which it probes.

// Disown is called when this replica stops owning key (Options.Owns turned
// false): a probe in flight is cancelled at once and its result discarded,
// and the Outcome is forgotten, so that nothing measured before the loss is
// reported if the check comes back. Unlike Remove, the check stays
// scheduled on its grid: once Owns reports it owned again it is probed at
// its next grid point, without another Upsert. Disowning an unknown key is
// a no-op.
func (s *Scheduler) Disown(key types.NamespacedName) {
	s.mu.Lock()
	e, exists := s.checks[key]
	if exists {
		e.outcome, e.hasOutcome = Outcome{}, false
		if f := s.flights[key]; f != nil {
			f.cancel()
		}
	}
	s.mu.Unlock()

	if exists {
		s.log.V(1).Info("Check disowned", "checker", key)
	}
}

// Gained is called when this replica starts owning key (Options.Owns
// turned true). The previous owner may have stopped probing at any moment
// from unprobedSince on (it crashed, or it stopped before its Lease was
// gone), so a turn of the check's grid skipped here since then may have
// been probed by nobody. The check is probed now (after the initial
// jitter, then on its grid again) only when waiting for its next grid
// point could leave a longer gap than probing now does, that is longer
// than its interval plus the time the hand-over took (now minus
// unprobedSince); otherwise it is probed at its next grid point, which
// spares a probe its previous owner most likely made already and a burst
// of catch-up probes. Either way the longest gap between two probes of a
// checker handed over stays within its interval plus the time the
// hand-over took, at any size. A zero unprobedSince, no turn skipped since
// then, an unknown key or a probe in flight: no-op.
func (s *Scheduler) Gained(key types.NamespacedName, unprobedSince time.Time) {
	s.mu.Lock()
	e := s.checks[key]
	if e == nil || unprobedSince.IsZero() || e.skipped.IsZero() || e.skipped.Before(unprobedSince) || s.flights[key] != nil {
		s.mu.Unlock()
		return
	}
	now := s.clock.Now()
	if !makeUpNow(now, unprobedSince, e.interval, e.offset) {
		s.mu.Unlock()
		return
	}
	missed := e.skipped
	e.skipped, e.onGrid = time.Time{}, false
	// A new revision of the same check: the item of its next grid point
	// goes stale, and the catch-up probe is its only turn.
	s.lastRev++
	e.rev = s.lastRev
	due := now.Add(s.jitterLocked(e.interval))
	if s.queue.push(due, key, e.rev) {
		s.wake.signal()
	}
	s.mu.Unlock()

	s.log.V(1).Info("Gained check probed now: a turn may have been missed", "checker", key, "missed", missed, "unprobedSince", unprobedSince, "due", due)
}
