package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/types"
)

// The dispatcher, which starts the probes of due checks, and the workers,
// which run them and store their outcomes.

// wakeup is the dispatcher's one-slot wake channel: "the earliest due time
// may have moved". It is signalled with the scheduler lock held, and the
// dispatcher drains it with the lock held right before it reads the heap,
// so a pending wake-up always means "changed since the dispatcher last
// looked", never a stale one. Neither ever blocks: one pending wake-up
// stands for any number.
type wakeup chan struct{}

// signal wakes the dispatcher.
func (w wakeup) signal() {
	select {
	case w <- struct{}{}:
	default:
	}
}

// drain discards a pending wake-up: the dispatcher is about to read the
// state that it was about.
func (w wakeup) drain() {
	select {
	case <-w:
	default:
	}
}

// step is what the dispatcher has to do next, as found by nextStepLocked.
type step int

const (
	stepIdle     step = iota // nothing queued: wait for a wake-up
	stepWait                 // earliest item is in the future: wait until then
	stepDispatch             // an item is due: probe it
	stepSkipped              // an item was due but its previous probe still runs: turn skipped
)

// job is a due turn of a check, popped from the heap. While the dispatcher
// holds a job to dispatch, the check has no current item in the heap (a
// skipped job's next turn is queued already).
type job struct {
	key types.NamespacedName
	rev uint64
	due time.Time
	// vantagePoints is the check's Check.VantagePoints, for Options.Owns.
	vantagePoints int
	// weight is the bytes of the memory budget its probe holds.
	weight int64
	// setAside is set when the turn waited for its namespace's share.
	setAside bool
	// unbuilt is set when the check is held without its target: an owned
	// turn builds it first (see buildJob).
	unbuilt bool
}

// nextStepLocked drops stale items from the top of the heap and returns the
// next thing to do. For stepWait it returns the delay; for stepDispatch the
// popped job; for stepSkipped the skipped job and the next due time.
//
// Turns set aside because their namespace held all its slots come first,
// once a slot of their namespace is free: they have been due longest. A due
// turn whose namespace is full is set aside, and the dispatcher goes on
// with the next one.
func (s *Scheduler) nextStepLocked(now time.Time) (st step, j job, wait time.Duration, next time.Time) {
	if j, ok := s.slots.nextWaiting(s.currentLocked); ok {
		return stepDispatch, j, 0, time.Time{}
	}
	for len(s.queue) > 0 {
		top := s.queue[0]
		e := s.checks[top.key]
		if e == nil || e.rev != top.rev {
			s.queue.pop() // stale
			continue
		}
		if top.due.After(now) {
			return stepWait, job{}, top.due.Sub(now), time.Time{}
		}
		s.queue.pop()
		j = job{key: top.key, rev: top.rev, due: top.due, vantagePoints: e.check.VantagePoints, weight: e.weight, unbuilt: s.unbuiltLocked(e)}
		if f := s.flights[top.key]; f != nil {
			if f.rev != e.rev {
				// A cancelled probe of an older revision is still winding
				// down; its worker re-queues this check when it returns.
				e.parked = true
				continue
			}
			next = nextAfterSkip(now, e.interval(), e.offset)
			s.queue.push(next, top.key, top.rev)
			f.overran = true
			s.load.skipped.Add(1)
			return stepSkipped, j, 0, next
		}
		// The weight of a check held without its target is known once it
		// is built (buildJob), if it is owned at all.
		if !j.unbuilt && s.slots.full(j.key.Namespace, j.weight) {
			j.setAside = true
			s.slots.setAside(j)
			s.load.setAside.Add(1)
			continue
		}
		return stepDispatch, j, 0, time.Time{}
	}
	return stepIdle, job{}, 0, time.Time{}
}

// currentLocked reports whether j is a turn of the current revision of its
// check.
func (s *Scheduler) currentLocked(j job) bool {
	e := s.checks[j.key]
	return e != nil && e.rev == j.rev
}

// releaseSlot frees what a probe of ns of weight bytes held of its
// namespace's share, and wakes the dispatcher if turns of ns wait for it.
func (s *Scheduler) releaseSlot(ns string, weight int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slots.release(ns, weight) {
		s.wake.signal()
	}
}

// requeue schedules the turn after j, at the next grid point, if j's
// revision is still current; it is used for turns that were not probed
// because this replica did not own the check, and records j's due time as
// the check's latest skipped turn (see Gained and Resume).
func (s *Scheduler) requeue(j job) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.checks[j.key]
	if e == nil || e.rev != j.rev {
		return time.Time{} // removed or changed; the new revision has its own item
	}
	e.skipped, e.onGrid = j.due, true
	next := nextAfterSkip(s.clock.Now(), e.interval(), e.offset)
	s.queue.push(next, j.key, j.rev)
	return next
}

// dispatch is the dispatcher loop. It returns when ctx is done, with the
// due time of the owned turn it held then, waiting for a worker, if any
// (zero otherwise): that turn was not started.
func (s *Scheduler) dispatch(ctx, probeCtx context.Context, wg *sync.WaitGroup) (held time.Time) {
	var timer sleepTimer
	defer timer.stop()
	// boundFreedAt is when the dispatcher last stopped waiting for the
	// bound: a turn due before then was held up by it, whether or not it
	// found the bound reached itself.
	var boundFreedAt time.Time
	for ctx.Err() == nil {
		s.mu.Lock()
		s.wake.drain()
		st, j, wait, next := s.nextStepLocked(s.clock.Now())
		if st == stepDispatch {
			s.inHand.Store(j.due.UnixNano())
		} else {
			s.inHand.Store(0)
		}
		s.mu.Unlock()

		switch st {
		case stepIdle:
			s.sleep(ctx, nil, 0)
		case stepWait:
			s.sleep(ctx, &timer, wait)
		case stepSkipped:
			if log, ok := s.debug(); ok {
				log.Info("Skipping probe, previous probe still running", "checker", j.key, "due", j.due, "next", next)
			}
		case stepDispatch:
			if !s.owns(j.key, j.vantagePoints, j.due) || s.leftBy(j.due) {
				s.skipNotOwned(j)
				continue
			}
			if j.unbuilt {
				var ok bool
				if j, ok = s.buildJob(ctx, j); !ok {
					continue
				}
			}
			waited, err := s.acquire(ctx, j.weight)
			if err != nil {
				return j.due // ctx done
			}
			if waited {
				boundFreedAt = s.clock.Now()
			} else if j.due.Before(boundFreedAt) {
				// Due while an earlier turn waited for the bound: held up
				// by it too.
				waited = true
				s.load.waited.Add(1)
			}
			// Waiting may have taken long: ask again right before probing.
			if waited && !s.owns(j.key, j.vantagePoints, j.due) {
				s.release(j.weight)
				s.skipNotOwned(j)
				continue
			}
			p, ok := s.startLocking(probeCtx, j, waited)
			if !ok {
				s.release(j.weight)
				continue
			}
			wg.Go(func() {
				defer s.release(j.weight)
				defer s.releaseSlot(j.key.Namespace, j.weight)
				s.probe(ctx, p)
			})
		}
	}
	return time.Time{}
}

// debug returns the logger of the per-probe messages (V(1)) and whether it
// is enabled. Callers build a message only when it is: its key/value
// arguments are boxed into interfaces, which allocates on every probe even
// when the logger then discards the message.
func (s *Scheduler) debug() (logr.Logger, bool) {
	log := s.log.V(1)
	return log, log.Enabled()
}

// acquire takes what a probe of weight bytes holds of the bound: one of
// Options.Workers when set, and weight bytes of the memory budget,
// waiting while either is short; waited reports whether it had to wait.
// A turn that waits is counted (Load.WaitedTurns) and Load.Saturated is
// set while it waits. It fails only when ctx is done, and then holds
// nothing. Only the dispatcher acquires, so taking the two in turn cannot
// deadlock.
func (s *Scheduler) acquire(ctx context.Context, weight int64) (waited bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	wait := func(sem *semaphore.Weighted, n int64) error {
		if !waited {
			waited = true
			s.load.waited.Add(1)
			s.load.saturated.Store(true)
			defer s.load.saturated.Store(false)
		}
		return sem.Acquire(ctx, n)
	}
	if s.count != nil && !s.count.TryAcquire(1) {
		if err := wait(s.count, 1); err != nil {
			return true, err
		}
	}
	if !s.memory.TryAcquire(weight) {
		if err := wait(s.memory, weight); err != nil {
			if s.count != nil {
				s.count.Release(1)
			}
			return true, err
		}
	}
	return waited, nil
}

// release returns what acquire took for a probe of weight bytes.
func (s *Scheduler) release(weight int64) {
	s.memory.Release(weight)
	if s.count != nil {
		s.count.Release(1)
	}
}

// skipNotOwned reschedules a due job that this replica does not own.
func (s *Scheduler) skipNotOwned(j job) {
	next := s.requeue(j)
	if log, ok := s.debug(); ok {
		log.Info("Skipping probe, checker not owned", "checker", j.key, "due", j.due, "next", next)
	}
}

// probeJob is a started probe handed to a worker.
type probeJob struct {
	ctx    context.Context
	flight *flight
	check  Check
	due    time.Time
	weight int64
	// start is when the probe was started, and behind whether it started
	// late (see Outcome.Behind).
	start  time.Time
	behind bool
}

// startLocking registers the probe of j as in flight and schedules the next
// turn; waited tells whether it waited for the bound. It returns false if
// the check was removed or changed while the dispatcher waited for the
// bound, or lost its target (it was disowned: its next turn is queued).
func (s *Scheduler) startLocking(ctx context.Context, j job, waited bool) (probeJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.checks[j.key]
	if e == nil || e.rev != j.rev {
		return probeJob{}, false
	}
	// Only the dispatcher starts probes, and nextStepLocked saw no flight
	// for this key, so there is none now.
	now := s.clock.Now()
	if s.unbuiltLocked(e) {
		// Disowned (its target dropped) while the turn waited: the next
		// turn builds it again if it is owned by then.
		s.queue.push(nextAfterSkip(now, e.interval(), e.offset), j.key, j.rev)
		return probeJob{}, false
	}
	next := nextAfterProbe(now, e.interval(), e.offset)
	s.queue.push(next, j.key, j.rev)
	e.skipped, e.onGrid = time.Time{}, true
	pctx, cancel := context.WithCancel(ctx)
	f := &flight{rev: j.rev, cancel: cancel}
	s.flights[j.key] = f
	s.slots.take(j.key.Namespace, j.weight)
	s.load.inFlightBytes.Add(j.weight)
	late := now.Sub(j.due) > LateThreshold
	if late && !waited && !j.setAside {
		s.load.late.Add(1)
	}
	return probeJob{ctx: pctx, flight: f, check: e.check, due: j.due, weight: j.weight, start: now, behind: waited || j.setAside || late}, true
}

// probe runs on a worker: it probes, stores the Outcome if the check is
// still at the revision the probe was started for, and notifies a change.
// ctx is the Start context.
func (s *Scheduler) probe(ctx context.Context, p probeJob) {
	defer p.flight.cancel()
	key := p.check.Key
	if log, ok := s.debug(); ok {
		log.Info("Probing", "checker", key, "generation", p.check.Generation, "due", p.due)
	}
	if s.observer != nil {
		s.observer.ProbeStarted(key, max(s.clock.Since(p.due), 0))
	}

	res := s.prober.Probe(p.ctx, p.check.Target)

	s.load.inFlightBytes.Add(-p.weight)
	out := Outcome{Key: key, Generation: p.check.Generation, Result: res}
	var stored, changed bool
	s.mu.Lock()
	out.Time = s.clock.Now()
	if s.flights[key] == p.flight {
		delete(s.flights, key)
	}
	e := s.checks[key]
	switch {
	case e == nil:
		// Removed while probing: discard.
	case e.rev == p.flight.rev:
		if p.ctx.Err() == nil && !p.flight.discarded { // neither cancelled nor disowned
			e.setPace(&out, p.start, p.behind, p.flight.overran)
			e.watchTarget(&out, e.outcome, &s.changes)
			changed = e.setOutcome(&out)
			if res.Success {
				e.counts.Successes++
			} else {
				e.counts.Failures++
			}
			stored = true
		}
	case e.parked:
		// Changed while probing, and the new revision came due meanwhile.
		e.parked = false
		s.queue.push(out.Time, key, e.rev)
		s.wake.signal()
	}
	s.mu.Unlock()

	if log, ok := s.debug(); ok {
		log.Info("Probe finished", "checker", key, "generation", out.Generation,
			"success", res.Success, "reason", res.Reason, "statusCode", res.StatusCode, "duration", res.Duration,
			"stored", stored, "changed", changed)
	}
	if stored && s.observer != nil {
		s.observer.ProbeFinished(out)
	}
	if changed && s.notify != nil {
		s.notify(ctx, key)
	}
}
