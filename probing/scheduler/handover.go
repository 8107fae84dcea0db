package scheduler

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// What the scheduler does when this replica's ownership of a check
// changes; every replica keeps every check scheduled, and Options.Owns
// decides which it probes.

// Disown is called when this replica stops owning key (Options.Owns turned
// false): a probe in flight is cancelled at once and its result discarded,
// and the Outcome is forgotten with its streak and what its probes saw of
// the target (see TargetChange), so that nothing measured
// before the loss is reported or counted if the check comes back. Unlike Remove, the check stays
// scheduled on its grid: once Owns reports it owned again it is probed at
// its next grid point, without another Upsert. With a Builder its target
// is dropped too, and built again by a turn that finds it owned. Disowning
// an unknown key is a no-op.
//
// Once the dispatcher has stopped (see StoppedProbing), the probe in flight
// is not cancelled: its result is discarded, and Start cancels it if it
// outlasts StopGrace.
func (s *Scheduler) Disown(key types.NamespacedName) {
	s.mu.Lock()
	e, exists := s.checks[key]
	if exists {
		e.outcome, e.probed, e.target = nil, false, nil
		if s.builder != nil {
			e.dropTarget()
		}
		if f := s.flights[key]; f != nil {
			if s.stoppedProbing() {
				// Shutting down (a replica fences itself once it has
				// stopped starting probes): the probe is the turn it was
				// started for and gets StopGrace to reach its target, as
				// Start gives every probe in flight; cancelling it now
				// would leave that turn probed by nobody.
				f.discarded = true
			} else {
				f.cancel()
			}
		}
	}
	s.mu.Unlock()

	if exists {
		s.log.V(1).Info("Check disowned", "checker", key)
	}
}

// TakeOver is called when the caller found the state of key written by
// another replica after the outcome it holds, the one that finished at
// seen (a take-over the ring did not report, or ownership that came back
// before its loss was handled): that outcome is forgotten with its streak
// and what the probes saw of the target (see TargetChange),
// so that it is never reported again and the next streak starts from what
// the other replica wrote. The next probe's outcome is notified, as a first
// one, whatever its result. A newer outcome (finished after seen), an
// unknown key or none held: nothing changes. A probe in flight goes on: it
// finishes after the state was read. The check still counts as probed
// here since it was gained (see Gained): forgetting its outcome makes no
// turn to make up.
func (s *Scheduler) TakeOver(key types.NamespacedName, seen time.Time) {
	s.mu.Lock()
	e := s.checks[key]
	forgot := e != nil && e.outcome != nil && !e.outcome.Time.After(seen)
	if forgot {
		e.outcome, e.target = nil, nil
	}
	s.mu.Unlock()

	if forgot {
		s.log.V(1).Info("Outcome held before a take-over forgotten", "checker", key, "seen", seen)
	}
}

// Gained is called when this replica starts owning key (Options.Owns
// turned true). The previous owner may have stopped probing at any moment
// from unprobedSince on (it crashed, or it stopped before its Lease was
// gone), so a turn of the check's grid skipped here since then may have
// been probed by nobody. The check is probed now (after the initial
// jitter, then on its grid again) only when waiting for its next grid
// point could leave a longer gap than its interval plus the longer of the
// time the hand-over took (now minus unprobedSince) and tolerance, a
// longer gap the caller accepts anyway (a replica that joins accepts what
// a crash may cost: a lease duration). Otherwise it is probed at its next
// grid point, which spares a probe its previous owner most likely made
// already and a burst of catch-up probes. The decision rests on the grid
// and unprobedSince alone, not on the turns skipped here: a replica that
// started shortly before (its checks scheduled after the turn its
// previous owner missed) has skipped none of them.
//
// Otherwise, a gained check whose first probe after its Upsert is still
// to come (it was scheduled here shortly before, while another replica
// owned it: a non-zero unprobedSince) is moved to its next grid point: it
// is not new, its previous owner has probed it on that grid, and probing
// it at once would probe it twice.
//
// A zero unprobedSince, no turn that can have been missed, an unknown key,
// a probe in flight or one finished since Owns turned true (the ring is
// published before its changes are reported): nothing else changes.
func (s *Scheduler) Gained(key types.NamespacedName, unprobedSince time.Time, tolerance time.Duration) {
	s.mu.Lock()
	e := s.checks[key]
	if e == nil || unprobedSince.IsZero() || e.probed || s.flights[key] != nil {
		// Unknown, nothing can have been missed, or probed (or being
		// probed) here since Owns turned true.
		s.mu.Unlock()
		return
	}
	now := s.clock.Now()
	var due time.Time
	var why string
	switch {
	case makeUpNow(now, unprobedSince, e.interval(), e.offset, tolerance):
		// Decided from the grid, not from the turns skipped here: a check
		// scheduled here shortly before (a replica that just started)
		// has not skipped the turns its previous owner may have missed.
		due, why = now.Add(s.jitterLocked(e.interval())), "a turn may have been missed: probed now"
		e.skipped, e.onGrid = time.Time{}, false
	case !e.onGrid && e.skipped.IsZero():
		due, why = nextAfterSkip(now, e.interval(), e.offset), "first probe here still to come: probed on its grid"
		e.onGrid = true
	default:
		s.mu.Unlock()
		return
	}
	s.rescheduleLocked(key, e, due)
	s.mu.Unlock()

	s.log.V(1).Info("Gained check rescheduled", "checker", key, "why", why, "unprobedSince", unprobedSince, "due", due)
}

// Resume is called when this replica owns its checks again after it
// skipped their turns for a while without losing them (a fencing that
// ended before it was published as a change of the ring, see
// sharding.AssignerOptions.FenceSettle): nobody probed those turns, so
// every check Options.Owns reports owned that skipped a turn due at or
// after since, and has started no probe since, is probed now (after the
// initial jitter, then on its grid again). The others wait for their next
// grid point, as they would have.
func (s *Scheduler) Resume(since time.Time) {
	type skippedTurn struct {
		key           types.NamespacedName
		rev           uint64
		vantagePoints int
	}
	var skipped []skippedTurn
	s.mu.Lock()
	for key, e := range s.checks {
		if !e.skipped.IsZero() && !e.skipped.Before(since) && s.flights[key] == nil {
			skipped = append(skipped, skippedTurn{key, e.rev, e.check.VantagePoints})
		}
	}
	s.mu.Unlock()

	// Options.Owns is asked outside the lock, as everywhere.
	owned := skipped[:0]
	for _, t := range skipped {
		if s.owns(t.key, t.vantagePoints, s.clock.Now()) {
			owned = append(owned, t)
		}
	}
	made := 0
	s.mu.Lock()
	now := s.clock.Now()
	for _, t := range owned {
		e := s.checks[t.key]
		if e == nil || e.rev != t.rev || e.skipped.Before(since) || s.flights[t.key] != nil {
			continue // changed, probed or being probed meanwhile
		}
		e.skipped, e.onGrid = time.Time{}, false
		s.rescheduleLocked(t.key, e, now.Add(s.jitterLocked(e.interval())))
		made++
	}
	s.mu.Unlock()
	s.log.Info("Resumed: skipped turns made up", "since", since, "checks", made)
}

// rescheduleLocked gives e, the check of key, a new revision whose only
// turn is due: the item of its next turn goes stale. s.mu must be held.
func (s *Scheduler) rescheduleLocked(key types.NamespacedName, e *entry, due time.Time) {
	s.lastRev++
	e.rev = s.lastRev
	if s.queue.push(due, key, e.rev) {
		s.wake.signal()
	}
}

// LeaveAt tells the scheduler that this replica leaves its ring at t, as
// it announced to the others, who probe its checks from then on: from now
// it starts no turn due at or after t (as if it owned no check), and
// StoppedProbing reports t at the latest. The turns due before t stay its
// own: see StartedBefore.
func (s *Scheduler) LeaveAt(t time.Time) {
	// On the wall clock alone, as the others read the instant from the
	// Lease: they take over exactly the turns this replica leaves.
	t = t.Round(0)
	s.leaveAt.Store(&t)
}

// leftBy reports whether a turn due at due is after this replica left its
// ring (see LeaveAt).
func (s *Scheduler) leftBy(due time.Time) bool {
	at := s.leaveAt.Load()
	return at != nil && !due.Before(*at)
}

// StartedBefore reports whether the dispatcher has dealt with every turn
// due before t: none is queued, set aside for its namespace's share, or
// waiting for the bound on probes in flight. A replica that leaves at t
// (LeaveAt) waits for it before it stops: a busy dispatcher may still hold
// turns due before t, which nobody else makes up. Turns of checks this
// replica does not own count too (the dispatcher skips them at once).
func (s *Scheduler) StartedBefore(t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.inHand.Load(); d != 0 && d < t.UnixNano() {
		return false
	}
	if len(s.queue) > 0 && s.queue[0].due.Before(t) {
		return false
	}
	for _, jobs := range s.slots.waiting {
		for _, j := range jobs {
			if j.due.Before(t) && s.currentLocked(j) {
				return false
			}
		}
	}
	return true
}

// StoppedProbing waits until Start has stopped starting probes (its
// context is done) and returns the instant from which this replica
// started none: every turn of a check it owned that was due before it was
// started (or skipped because the check's previous probe still ran), and
// none due at or after it. That is when the dispatcher stopped, or the due
// time of the earliest owned turn it had not started by then (late, set
// aside for a namespace slot, or waiting for a worker). A replica that
// hands its checks over on shutdown gives it to the others, who then probe
// exactly the turns it did not (see Gained). ok is false when ctx ends
// first.
func (s *Scheduler) StoppedProbing(ctx context.Context) (at time.Time, ok bool) {
	select {
	case <-s.probingStopped:
		return s.stoppedAt, true
	case <-ctx.Done():
		return time.Time{}, false
	}
}

// recordStop records when the dispatcher, which has returned, stopped
// starting probes (see StoppedProbing); held is the due time of the owned
// turn it held then, if any. A check whose new revision waited for the
// cancelled probe of an old one (parked) has no due time kept, and is not
// counted. Options.Owns is asked outside the lock, as everywhere.
func (s *Scheduler) recordStop(held time.Time) {
	s.mu.Lock()
	at := s.clock.Now()
	if left := s.leaveAt.Load(); left != nil && left.Before(at) {
		at = *left // no turn due from then on was started
	}
	if !held.IsZero() && held.Before(at) {
		at = held
	}
	var late []job // current turns due before at, not started
	consider := func(key types.NamespacedName, rev uint64, due time.Time) {
		if e := s.checks[key]; e != nil && e.rev == rev && due.Before(at) {
			late = append(late, job{key: key, rev: rev, due: due, vantagePoints: e.check.VantagePoints})
		}
	}
	for _, it := range s.queue {
		consider(it.key, it.rev, it.due)
	}
	for _, jobs := range s.slots.waiting {
		for _, j := range jobs {
			consider(j.key, j.rev, j.due)
		}
	}
	s.mu.Unlock()
	for _, j := range late {
		if j.due.Before(at) && s.owns(j.key, j.vantagePoints, j.due) {
			at = j.due
		}
	}
	s.stoppedAt = at
	close(s.probingStopped)
	s.log.Info("Stopped starting probes", "unprobedFrom", at)
}
