package scheduler

import (
	"container/heap"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/sharding"
)

const (
	// DefaultWorkers is the number of concurrent probes when
	// Options.Workers is zero.
	DefaultWorkers = 64
	// DefaultInitialJitter is the upper bound of the first-probe delay when
	// Options.InitialJitter is zero.
	DefaultInitialJitter = time.Second
	// FallbackInterval replaces a non-positive Check.Interval, which would
	// otherwise make the dispatcher spin.
	FallbackInterval = time.Second
)

// Check is everything the Scheduler needs to know about one checker.
type Check struct {
	// Key identifies the checker object.
	Key types.NamespacedName
	// Generation is the object's metadata.generation; it is echoed in every
	// Outcome of this check.
	Generation int64
	// Interval is the time between two probes. It must be positive; a
	// non-positive value is replaced by FallbackInterval.
	Interval time.Duration
	// Target is what to probe.
	Target probing.Target
}

// equal reports whether c and o describe the same check: an Upsert of an
// equal check is a no-op.
func (c Check) equal(o Check) bool {
	return c.Key == o.Key && c.Generation == o.Generation && c.Interval == o.Interval && c.Target.Equal(o.Target)
}

// Outcome is the result of the latest completed probe of a check.
type Outcome struct {
	// Key identifies the checker object.
	Key types.NamespacedName
	// Generation is the Check.Generation the probe was run for.
	Generation int64
	// Result is what the prober reported.
	Result probing.Result
	// Time is when the probe finished, read from the scheduler's clock.
	Time time.Time
}

// changedFrom reports whether o must be notified given the previously stored
// outcome prev (ok is false when there was none).
func (o Outcome) changedFrom(prev Outcome, ok bool) bool {
	return !ok || prev.Generation != o.Generation || !prev.Result.SameOutcome(o.Result)
}

// Options configure a Scheduler. Only Prober is required.
type Options struct {
	// Prober runs the probes. It must honour its context and the target's
	// timeout, and be safe for concurrent use. Required.
	Prober probing.Prober
	// Workers is the maximum number of concurrent probes. Zero means
	// DefaultWorkers; negative is an error.
	Workers int
	// Clock is the source of time and timers. Nil means clock.RealClock{}.
	Clock clock.WithTicker
	// InitialJitter bounds the random delay before the first probe of a new
	// or changed check: the delay is uniform in
	// [0, min(InitialJitter, Interval/4)). Zero means DefaultInitialJitter; a
	// negative value disables the jitter (first probe at once).
	InitialJitter time.Duration
	// Ownership decides, right before each probe, whether this replica
	// probes the check. A check that is not owned is not probed but stays
	// scheduled. Nil means this replica owns every check.
	Ownership sharding.Ownership
	// Notify is called by the worker after it stored an Outcome that differs
	// from the previous one (or is the first one) for key. It is called
	// without any scheduler lock held and may block, for example on a
	// channel send, and may call Upsert, Remove and Latest; while it blocks
	// it holds a worker slot. It must return once ctx is done. Nil means no
	// notification.
	Notify func(ctx context.Context, key types.NamespacedName)
	// Logger receives structured logs; per-probe messages are at V(1). The
	// zero value discards everything.
	Logger logr.Logger
	// Observer is told when probes start and finish, for metrics. Nil means
	// none.
	Observer Observer
	// Rand returns a uniform random number in [0, n) for n > 0; it is used
	// for the initial jitter. It is called with the scheduler lock held and
	// must not block. Nil means math/rand/v2.Int64N.
	Rand func(n int64) int64
}

// Observer is told about the probes a Scheduler runs. Its methods are
// called on the worker goroutines without any scheduler lock held; they
// must be fast and safe for concurrent use.
type Observer interface {
	// ProbeStarted is called right before a probe starts, lag after the
	// time it was due (never negative).
	ProbeStarted(key types.NamespacedName, lag time.Duration)
	// ProbeFinished is called with the result of every probe whose Outcome
	// was stored: not for probes cancelled by Remove, by a change of the
	// check or by shutdown.
	ProbeFinished(key types.NamespacedName, res probing.Result)
}

// ProbeCounts counts the stored outcomes of a check, by success.
type ProbeCounts struct {
	Successes, Failures uint64
}

// CheckState is what a Scheduler knows of one check at a moment: see
// Scheduler.Snapshot.
type CheckState struct {
	// Key identifies the checker object.
	Key types.NamespacedName
	// Outcome is the latest stored outcome; valid only when HasOutcome.
	Outcome    Outcome
	HasOutcome bool
	// Counts counts the outcomes stored since the check was added; they
	// survive changes of the check (Upsert) but not Remove.
	Counts ProbeCounts
}

// Scheduler probes a changing set of checks, each once per interval, on a
// bounded pool of workers. It is safe for concurrent use; Upsert, Remove,
// Latest and Len may be called before, during and after Start.
type Scheduler struct {
	prober    probing.Prober
	workers   int
	clock     clock.WithTicker
	jitter    time.Duration // <= 0: no jitter
	ownership sharding.Ownership
	notify    func(ctx context.Context, key types.NamespacedName)
	observer  Observer
	log       logr.Logger
	rand      func(n int64) int64

	sem     *semaphore.Weighted
	wake    chan struct{} // buffered 1: "the earliest due time may have moved"
	started atomic.Bool

	mu      sync.Mutex
	checks  map[types.NamespacedName]*entry
	flights map[types.NamespacedName]*flight // probes in flight, by key
	queue   dueQueue
	lastRev uint64
}

// entry is the state of one check. It is replaced, not mutated, when the
// check changes, so that a new revision starts from a clean state.
type entry struct {
	check    Check
	interval time.Duration // effective, > 0
	rev      uint64
	// parked is set when the check came due while a cancelled probe of an
	// older revision was still running; that probe's worker re-queues it.
	parked     bool
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

// dueQueue is a min-heap of items by due time, for container/heap.
type dueQueue []item

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

// New validates opts, applies the defaults and returns a Scheduler that is
// ready for Upsert and Start.
func New(opts Options) (*Scheduler, error) {
	if opts.Prober == nil {
		return nil, errors.New("scheduler: Options.Prober is required")
	}
	if opts.Workers < 0 {
		return nil, errors.New("scheduler: Options.Workers must not be negative")
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.InitialJitter == 0 {
		opts.InitialJitter = DefaultInitialJitter
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.Rand == nil {
		opts.Rand = rand.Int64N
	}
	return &Scheduler{
		prober:    opts.Prober,
		workers:   opts.Workers,
		clock:     opts.Clock,
		jitter:    opts.InitialJitter,
		ownership: opts.Ownership,
		notify:    opts.Notify,
		observer:  opts.Observer,
		log:       opts.Logger,
		rand:      opts.Rand,
		sem:       semaphore.NewWeighted(int64(opts.Workers)),
		wake:      make(chan struct{}, 1),
		checks:    map[types.NamespacedName]*entry{},
		flights:   map[types.NamespacedName]*flight{},
	}, nil
}

// Upsert adds c, or replaces the check with the same key if its Generation,
// Interval or Target differ. Replacing cancels the probe in flight for the
// key, forgets its Outcome and schedules a new first probe after the initial
// jitter. Upserting a check equal to the known one is a no-op and leaves its
// schedule and Outcome untouched.
func (s *Scheduler) Upsert(c Check) {
	interval := c.Interval
	if interval <= 0 {
		interval = FallbackInterval
	}

	s.mu.Lock()
	old, exists := s.checks[c.Key]
	if exists && old.check.equal(c) {
		s.mu.Unlock()
		return
	}
	if f := s.flights[c.Key]; exists && f != nil {
		f.cancel()
	}
	s.lastRev++
	e := &entry{check: c, interval: interval, rev: s.lastRev}
	if exists {
		e.counts = old.counts
	}
	s.checks[c.Key] = e
	due := s.clock.Now().Add(s.jitterLocked(interval))
	earlier := len(s.queue) == 0 || due.Before(s.queue[0].due)
	heap.Push(&s.queue, item{due: due, key: c.Key, rev: e.rev})
	if earlier {
		s.signalLocked()
	}
	s.mu.Unlock()

	if c.Interval <= 0 {
		s.log.Error(nil, "Non-positive probe interval, using fallback", "checker", c.Key, "interval", c.Interval, "fallback", FallbackInterval)
	}
	s.log.V(1).Info("Check scheduled", "checker", c.Key, "generation", c.Generation, "interval", interval, "due", due, "changed", exists)
}

// Remove forgets the check with key: its schedule and Outcome are dropped and
// a probe in flight is cancelled at once; the result of that probe is
// discarded. Removing an unknown key is a no-op.
func (s *Scheduler) Remove(key types.NamespacedName) {
	s.mu.Lock()
	_, exists := s.checks[key]
	if exists {
		delete(s.checks, key)
		if f := s.flights[key]; f != nil {
			f.cancel()
		}
	}
	s.mu.Unlock()

	if exists {
		s.log.V(1).Info("Check removed", "checker", key)
	}
}

// Latest returns the Outcome of the latest completed probe of the current
// revision of the check with key, and false if there is none yet.
func (s *Scheduler) Latest(key types.NamespacedName) (Outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.checks[key]
	if !ok || !e.hasOutcome {
		return Outcome{}, false
	}
	return e.outcome, true
}

// Snapshot returns the state of every known check, in no particular order.
// It copies under the lock and is meant for metrics scrapes.
func (s *Scheduler) Snapshot() []CheckState {
	s.mu.Lock()
	defer s.mu.Unlock()
	states := make([]CheckState, 0, len(s.checks))
	for key, e := range s.checks {
		states = append(states, CheckState{Key: key, Outcome: e.outcome, HasOutcome: e.hasOutcome, Counts: e.counts})
	}
	return states
}

// InFlight returns the number of probes running now.
func (s *Scheduler) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.flights)
}

// Len returns the number of known checks.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.checks)
}

// NeedLeaderElection returns false: the scheduler runs on every replica, and
// Options.Ownership splits the checks between them.
func (s *Scheduler) NeedLeaderElection() bool { return false }

// Start runs the dispatcher until ctx is done; it implements
// controller-runtime's manager.Runnable. Before returning it cancels every
// probe in flight and waits for every goroutine it started. It returns nil
// after ctx is done, and an error if called more than once.
func (s *Scheduler) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("scheduler: Start called more than once")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel() // cancels every probe context, all children of ctx
		wg.Wait()
		s.log.Info("Scheduler stopped")
	}()

	s.log.Info("Scheduler started", "workers", s.workers, "initialJitter", s.jitter, "checks", s.Len())
	s.dispatch(ctx, &wg)
	return nil
}

// signalLocked wakes the dispatcher without blocking. It is called with the
// lock held and the dispatcher drains the wake channel with the lock held
// (see drainWakeLocked), so a pending wake-up always means "changed since
// the dispatcher last looked", never a stale one.
func (s *Scheduler) signalLocked() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// drainWakeLocked discards a pending wake-up: the dispatcher is about to
// read the state that the wake-up was about.
func (s *Scheduler) drainWakeLocked() {
	select {
	case <-s.wake:
	default:
	}
}

// jitterLocked returns the delay before the first probe of a check.
func (s *Scheduler) jitterLocked(interval time.Duration) time.Duration {
	bound := min(s.jitter, interval/4)
	if bound <= 0 {
		return 0
	}
	return time.Duration(min(max(s.rand(int64(bound)), 0), int64(bound)-1))
}

// nextDue returns the due time of the turn after the one due at due: one
// interval later, or, if that has already passed, one interval from now.
func nextDue(due time.Time, interval time.Duration, now time.Time) time.Time {
	next := due.Add(interval)
	if !next.After(now) {
		next = now.Add(interval)
	}
	return next
}

// owns reports whether this replica probes key. Called without the lock.
func (s *Scheduler) owns(key types.NamespacedName) bool {
	return s.ownership == nil || s.ownership.Owns(key)
}

// step is what the dispatcher has to do next, as found by nextStepLocked.
type step int

const (
	stepIdle     step = iota // nothing queued: wait for a wake-up
	stepWait                 // earliest item is in the future: wait until then
	stepDispatch             // an item is due: probe it
	stepSkipped              // an item was due but its previous probe still runs: turn skipped
)

// job is a due check the dispatcher is about to probe. While the dispatcher
// holds a job, the check has no current item in the heap.
type job struct {
	key types.NamespacedName
	rev uint64
	due time.Time
}

// nextStepLocked drops stale items from the top of the heap and returns the
// next thing to do. For stepWait it returns the delay; for stepDispatch the
// popped job; for stepSkipped the skipped job and the next due time.
func (s *Scheduler) nextStepLocked(now time.Time) (st step, j job, wait time.Duration, next time.Time) {
	for len(s.queue) > 0 {
		top := s.queue[0]
		e := s.checks[top.key]
		if e == nil || e.rev != top.rev {
			heap.Pop(&s.queue) // stale
			continue
		}
		if top.due.After(now) {
			return stepWait, job{}, top.due.Sub(now), time.Time{}
		}
		heap.Pop(&s.queue)
		j = job{key: top.key, rev: top.rev, due: top.due}
		if f := s.flights[top.key]; f != nil {
			if f.rev != e.rev {
				// A cancelled probe of an older revision is still winding
				// down; its worker re-queues this check when it returns.
				e.parked = true
				continue
			}
			next = nextDue(top.due, e.interval, now)
			heap.Push(&s.queue, item{due: next, key: top.key, rev: top.rev})
			return stepSkipped, j, 0, next
		}
		return stepDispatch, j, 0, time.Time{}
	}
	return stepIdle, job{}, 0, time.Time{}
}

// requeue schedules the turn after j if j's revision is still current; it is
// used for turns that were not probed.
func (s *Scheduler) requeue(j job) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.checks[j.key]
	if e == nil || e.rev != j.rev {
		return time.Time{} // removed or changed; the new revision has its own item
	}
	next := nextDue(j.due, e.interval, s.clock.Now())
	heap.Push(&s.queue, item{due: next, key: j.key, rev: j.rev})
	return next
}

// dispatch is the dispatcher loop. It returns when ctx is done.
func (s *Scheduler) dispatch(ctx context.Context, wg *sync.WaitGroup) {
	for ctx.Err() == nil {
		s.mu.Lock()
		s.drainWakeLocked()
		st, j, wait, next := s.nextStepLocked(s.clock.Now())
		s.mu.Unlock()

		switch st {
		case stepIdle:
			s.sleep(ctx, 0, false)
		case stepWait:
			s.sleep(ctx, wait, true)
		case stepSkipped:
			s.log.V(1).Info("Skipping probe, previous probe still running", "checker", j.key, "due", j.due, "next", next)
		case stepDispatch:
			if !s.owns(j.key) {
				s.skipNotOwned(j)
				continue
			}
			if err := s.sem.Acquire(ctx, 1); err != nil {
				return // ctx done
			}
			// Acquiring may have taken long: ask again right before probing.
			if !s.owns(j.key) {
				s.sem.Release(1)
				s.skipNotOwned(j)
				continue
			}
			p, ok := s.startLocking(ctx, j)
			if !ok {
				s.sem.Release(1)
				continue
			}
			wg.Go(func() {
				defer s.sem.Release(1)
				s.probe(ctx, p)
			})
		}
	}
}

// skipNotOwned reschedules a due job that this replica does not own.
func (s *Scheduler) skipNotOwned(j job) {
	next := s.requeue(j)
	s.log.V(1).Info("Skipping probe, checker not owned", "checker", j.key, "due", j.due, "next", next)
}

// sleep blocks until ctx is done, the dispatcher is woken, or, if timed,
// wait has passed on the scheduler clock.
func (s *Scheduler) sleep(ctx context.Context, wait time.Duration, timed bool) {
	var fired <-chan time.Time
	if timed {
		t := s.clock.NewTimer(wait)
		defer t.Stop()
		fired = t.C()
	}
	select {
	case <-ctx.Done():
	case <-s.wake:
	case <-fired:
	}
}

// probeJob is a started probe handed to a worker.
type probeJob struct {
	ctx    context.Context
	flight *flight
	check  Check
	due    time.Time
}

// startLocking registers the probe of j as in flight and schedules the next
// turn. It returns false if the check was removed or changed while the
// dispatcher waited for a worker slot.
func (s *Scheduler) startLocking(ctx context.Context, j job) (probeJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.checks[j.key]
	if e == nil || e.rev != j.rev {
		return probeJob{}, false
	}
	// Only the dispatcher starts probes, and nextStepLocked saw no flight
	// for this key, so there is none now.
	next := nextDue(j.due, e.interval, s.clock.Now())
	heap.Push(&s.queue, item{due: next, key: j.key, rev: j.rev})
	pctx, cancel := context.WithCancel(ctx)
	f := &flight{rev: j.rev, cancel: cancel}
	s.flights[j.key] = f
	return probeJob{ctx: pctx, flight: f, check: e.check, due: j.due}, true
}

// probe runs on a worker: it probes, stores the Outcome if the check is
// still at the revision the probe was started for, and notifies a change.
// ctx is the Start context.
func (s *Scheduler) probe(ctx context.Context, p probeJob) {
	defer p.flight.cancel()
	key := p.check.Key
	s.log.V(1).Info("Probing", "checker", key, "generation", p.check.Generation, "due", p.due)
	if s.observer != nil {
		s.observer.ProbeStarted(key, max(s.clock.Since(p.due), 0))
	}

	res := s.prober.Probe(p.ctx, p.check.Target)

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
		if p.ctx.Err() == nil { // not cancelled by shutdown
			changed = out.changedFrom(e.outcome, e.hasOutcome)
			e.outcome, e.hasOutcome = out, true
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
		heap.Push(&s.queue, item{due: out.Time, key: key, rev: e.rev})
		s.signalLocked()
	}
	s.mu.Unlock()

	s.log.V(1).Info("Probe finished", "checker", key, "generation", out.Generation,
		"success", res.Success, "reason", res.Reason, "statusCode", res.StatusCode, "duration", res.Duration,
		"stored", stored, "changed", changed)
	if stored && s.observer != nil {
		s.observer.ProbeFinished(key, res)
	}
	if changed && s.notify != nil {
		s.notify(ctx, key)
	}
}
