package scheduler

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
)

// Checks kept without their targets. Every replica keeps every check on
// its grid, so that a hand-over waits for nothing, but a built target (its
// parsed URL, TLS settings, compiled conditions) is needed only by the
// replicas that probe the check: with a Builder, a check this replica
// does not probe may be upserted with the zero Target, and the dispatcher
// builds it when one of its turns finds it owned.

// Builder returns the check of key as it stands now, its Target built, or
// false when it cannot be probed now (the checker is gone, its spec or a
// Secret it needs is invalid, a read failed): the dispatcher then skips
// that turn. It is called by the dispatcher, without any scheduler lock
// held, for a check whose turn came while this replica owns it and which
// the scheduler holds without a target; it must be quick (no request to
// an API server) and must not call Upsert, Remove or Disown.
type Builder func(ctx context.Context, key types.NamespacedName) (Check, bool)

// SetBuilder lets the scheduler keep checks without their targets (see
// Builder): an Upsert whose check has the zero Target keeps the check on
// its grid, drops the target it held and is not probed until a turn finds
// it owned, when build builds it; Disown drops the target too. An Upsert
// that differs from the check held only by its target being built, or
// dropped, keeps the check's schedule and outcome. Without a Builder a
// check is probed with whatever Target it was given. It must be called
// before Start.
func (s *Scheduler) SetBuilder(build Builder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.builder = build
}

// setTarget gives e's check target, and its probes the bytes it holds in
// flight (at most budget).
func (e *entry) setTarget(target probing.Target, budget int64) {
	e.check.Target = target
	e.weight = min(InFlightBytes(target), budget)
}

// dropTarget forgets e's target: the check stays on its grid, and a turn
// that finds it owned builds it again.
func (e *entry) dropTarget() {
	e.check.Target = probing.Target{}
	e.weight = 0
}

// unbuiltLocked reports whether e is held without its target, to be built
// by the Builder before it is probed.
func (s *Scheduler) unbuiltLocked(e *entry) bool {
	return s.builder != nil && e.check.Target.IsZero()
}

// retargetLocked applies an Upsert of c to e, the entry of the same key,
// when the two differ only in whether the target is built: the target is
// dropped (c has none: not probed here) or filled in (e had none). It
// reports whether it did; otherwise the Upsert is a new revision.
func (s *Scheduler) retargetLocked(e *entry, c Check) bool {
	if s.builder == nil || !e.check.sameSchedule(c) {
		return false
	}
	switch {
	case c.Target.IsZero():
		e.dropTarget()
	case e.check.Target.IsZero():
		e.setTarget(c.Target, s.budget)
	default:
		return false
	}
	return true
}

// buildJob builds the target of the check of j, an owned turn of a check
// held without one, and returns j with the weight of its probe. It reports
// false when j is not to be probed now: the check changed meanwhile (its
// new revision has its own turn), could not be built (the turn is
// skipped, as one not owned), or its namespace holds all its share (the
// turn is set aside until a probe of the namespace ends).
func (s *Scheduler) buildJob(ctx context.Context, j job) (job, bool) {
	s.mu.Lock()
	build := s.builder
	s.mu.Unlock()
	c, built := build(ctx, j.key)
	built = built && c.Key == j.key && !c.Target.IsZero()

	s.mu.Lock()
	e := s.checks[j.key]
	switch {
	case e == nil || e.rev != j.rev:
		s.mu.Unlock()
		return j, false
	case !e.check.Target.IsZero():
		// Built meanwhile by an Upsert of this revision.
	case !built:
		s.mu.Unlock()
		next := s.requeue(j)
		if log, ok := s.debug(); ok {
			log.Info("Skipping probe, check could not be built", "checker", j.key, "due", j.due, "next", next)
		}
		return j, false
	case e.check.sameSchedule(c):
		e.setTarget(c.Target, s.budget)
	default:
		// The checker changed since it was upserted (its reconcile is on
		// its way): a new revision, with a first turn of its own.
		s.mu.Unlock()
		s.Upsert(c)
		return j, false
	}
	j.weight = e.weight
	if s.slots.full(j.key.Namespace, j.weight) {
		j.setAside = true
		s.slots.setAside(j)
		s.load.setAside.Add(1)
		s.mu.Unlock()
		return j, false
	}
	s.mu.Unlock()
	return j, true
}
