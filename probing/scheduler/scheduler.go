package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/networkio/webchecker/probing"
)

const (
	// DefaultInitialJitter is the upper bound of the first-probe delay when
	// Options.InitialJitter is zero.
	DefaultInitialJitter = time.Second
	// DefaultNamespaceShare is the share of the bound on probes in flight
	// one namespace may hold at once when Options.NamespaceShare is zero.
	DefaultNamespaceShare = 0.5
	// LateThreshold is how late a probe may start against its due time
	// before its Outcome reports the check Behind and the turn is counted
	// late (Load.LateTurns): half of the 2s a checker's gap between probes
	// may exceed its interval by.
	LateThreshold = time.Second
	// FallbackInterval replaces a non-positive Check.Interval, which would
	// otherwise make the dispatcher spin.
	FallbackInterval = time.Second
)

// Options configure a Scheduler. Only Prober is required.
type Options struct {
	// Prober runs the probes. It must honour its context and the target's
	// timeout, and be safe for concurrent use. Required.
	Prober probing.Prober
	// MemoryLimit is the process's memory limit, as
	// debug.SetMemoryLimit(-1) reports GOMEMLIMIT; the probes in flight
	// may hold MemoryBudget(MemoryLimit) bytes, each the InFlightBytes of
	// its target. Zero (or math.MaxInt64, no limit set) means
	// DefaultMemoryBudget.
	MemoryLimit int64
	// Workers, when positive, bounds the number of probes in flight as
	// well, below what the memory budget allows. Zero means no bound but
	// the budget; negative is an error.
	Workers int
	// NamespaceShare is the share of the bound that the checks of one
	// namespace may hold at once: at most NamespaceShare × the memory
	// budget, and when Workers is set at most max(1, ceil(NamespaceShare
	// × Workers)) probes of a namespace run at the same time, so that one
	// namespace whose targets hang cannot delay the probes of the others.
	// Due checks of a namespace at its limit wait, without holding up other
	// namespaces, until one of its probes ends. It must be in (0, 1]; 1
	// lets one namespace take all. Zero means DefaultNamespaceShare.
	NamespaceShare float64
	// Clock is the source of time and timers. Nil means clock.RealClock{}.
	Clock clock.WithTicker
	// InitialJitter bounds the random delay before the first probe of a new
	// or changed check: the delay is uniform in
	// [0, min(InitialJitter, Interval/4)). Zero means DefaultInitialJitter; a
	// negative value disables the jitter (first probe at once).
	InitialJitter time.Duration
	// Owns reports whether this replica probes, right now, the turn due at
	// due of key, whose check asks for vantagePoints replicas
	// (Check.VantagePoints): the due time lets a replica that took the
	// check over leave a turn due before the hand-over to the previous
	// owner (see sharding.Assigner.ProbesTurn). It is called right before
	// each probe, without any scheduler lock held, and must be cheap and
	// safe for concurrent use. A turn that is not owned is not probed; the
	// check stays scheduled. Nil means every turn is owned.
	Owns func(key types.NamespacedName, vantagePoints int, due time.Time) bool
	// Notify is called by the worker after it stored an Outcome for key
	// that differs from the previous one (its result, its Overran or
	// Behind mark, or a new Outcome.Change), is the first one, or whose
	// streak reached the threshold of its verdict. It is called
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
	// Phase returns the offset of key's probes within interval (interval
	// is positive): after its first probe a check is probed at the grid
	// points { Unix epoch + k·interval + offset } of the scheduler's clock.
	// It is called on every Upsert, without any scheduler lock held; it
	// must be cheap and deterministic, so that every replica puts a check
	// at the same phase. A result outside [0, interval)
	// is reduced modulo interval. Nil means HashPhase.
	Phase func(key types.NamespacedName, interval time.Duration) time.Duration
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
	// ProbeFinished is called with every Outcome stored, after it was
	// stored and before a change is notified: not for probes cancelled by
	// Remove, by a change of the check or by shutdown.
	ProbeFinished(o Outcome)
}

// Scheduler probes a changing set of checks, each once per interval,
// starting each probe when it is due, up to a bound on the probes in
// flight. It is safe for concurrent use; Upsert, Remove, Latest and Len
// may be called before, during and after Start.
type Scheduler struct {
	prober   probing.Prober
	workers  int   // 0: no bound by number
	budget   int64 // bytes the probes in flight may hold
	clock    clock.WithTicker
	jitter   time.Duration // <= 0: no jitter
	owns     func(key types.NamespacedName, vantagePoints int, due time.Time) bool
	notify   func(ctx context.Context, key types.NamespacedName)
	observer Observer
	log      logr.Logger
	rand     func(n int64) int64
	phase    func(key types.NamespacedName, interval time.Duration) time.Duration
	// builder, when set, builds the checks held without their targets
	// (see SetBuilder); guarded by mu.
	builder Builder

	// memory holds the bytes of the budget the probes in flight hold;
	// count, when Workers is set, the probes.
	memory  *semaphore.Weighted
	count   *semaphore.Weighted
	slots   namespaceSlots // guarded by mu
	load    loadCounts
	wake    wakeup
	started atomic.Bool

	// probingStopped is closed once Start stopped starting probes, with
	// stoppedAt set (see StoppedProbing).
	probingStopped chan struct{}
	stoppedAt      time.Time
	// leaveAt is when this replica leaves its ring (see LeaveAt); nil
	// until then.
	leaveAt atomic.Pointer[time.Time]
	// inHand is the due time (Unix nanoseconds) of the owned turn the
	// dispatcher popped and has not started or skipped yet; 0 when none.
	// It is set under mu, with the pop (see StartedBefore).
	inHand atomic.Int64

	mu      sync.Mutex
	checks  map[types.NamespacedName]*entry
	flights map[types.NamespacedName]*flight // probes in flight, by key
	queue   dueQueue
	lastRev uint64
	// changes is the Seq of the latest TargetChange seen.
	changes uint64
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
	if opts.NamespaceShare == 0 {
		opts.NamespaceShare = DefaultNamespaceShare
	}
	if !(opts.NamespaceShare > 0 && opts.NamespaceShare <= 1) {
		return nil, fmt.Errorf("scheduler: Options.NamespaceShare %v must be in (0, 1]", opts.NamespaceShare)
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
	if opts.Phase == nil {
		opts.Phase = HashPhase
	}
	if opts.Owns == nil {
		opts.Owns = func(types.NamespacedName, int, time.Time) bool { return true }
	}
	budget := MemoryBudget(opts.MemoryLimit)
	var count *semaphore.Weighted
	if opts.Workers > 0 {
		count = semaphore.NewWeighted(int64(opts.Workers))
	}
	return &Scheduler{
		prober:   opts.Prober,
		workers:  opts.Workers,
		budget:   budget,
		clock:    opts.Clock,
		jitter:   opts.InitialJitter,
		owns:     opts.Owns,
		notify:   opts.Notify,
		observer: opts.Observer,
		log:      opts.Logger,
		rand:     opts.Rand,
		phase:    opts.Phase,
		memory:   semaphore.NewWeighted(budget),
		count:    count,
		slots:    newNamespaceSlots(opts.NamespaceShare, opts.Workers, budget),
		wake:     make(wakeup, 1),
		checks:   map[types.NamespacedName]*entry{},

		probingStopped: make(chan struct{}),
		flights:        map[types.NamespacedName]*flight{},
	}, nil
}

// Upsert adds c, or replaces the check with the same key if its Generation,
// Interval or Target differ (with a Builder, a target built or dropped is
// no difference: see SetBuilder). Replacing cancels the probe in flight for the
// key, forgets its Outcome and schedules a new first probe after the initial
// jitter; later probes fall on the check's grid (see Options.Phase and the
// package documentation). Upserting a check equal to the known one is a
// no-op and leaves its schedule and Outcome untouched.
func (s *Scheduler) Upsert(c Check) {
	interval := effectiveInterval(c.Interval)
	offset := normalizePhase(s.phase(c.Key, interval), interval)

	s.mu.Lock()
	old, exists := s.checks[c.Key]
	if exists && (old.check.equal(c) || s.retargetLocked(old, c)) {
		s.mu.Unlock()
		return
	}
	if f := s.flights[c.Key]; exists && f != nil {
		f.cancel()
	}
	s.lastRev++
	e := &entry{check: c, offset: offset, rev: s.lastRev, weight: min(InFlightBytes(c.Target), s.budget)}
	if exists {
		e.counts = old.counts
	}
	s.checks[c.Key] = e
	due := s.clock.Now().Add(s.jitterLocked(interval))
	if s.queue.push(due, c.Key, e.rev) {
		s.wake.signal()
	}
	s.mu.Unlock()

	if c.Interval <= 0 {
		s.log.Error(nil, "Non-positive probe interval, using fallback", "checker", c.Key, "interval", c.Interval, "fallback", FallbackInterval)
	}
	if log, ok := s.debug(); ok {
		log.Info("Check scheduled", "checker", c.Key, "generation", c.Generation, "interval", interval, "phase", offset, "due", due, "changed", exists)
	}
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
	if !ok {
		return Outcome{}, false
	}
	return e.latest()
}

// Snapshot returns the state of every known check, in no particular order.
// It copies under the lock.
func (s *Scheduler) Snapshot() []CheckState { return s.SnapshotOf(nil) }

// SnapshotOf returns the state of every known check for which keep
// reports true (every check when keep is nil), in no particular order: a
// metrics scrape copies only the checks its replica probes or owns. keep
// is called once per check, under the scheduler's lock, with the check's
// key and vantage points, and the checks it keeps are returned in the
// order it was called for them; it must be quick and must not call the
// Scheduler.
func (s *Scheduler) SnapshotOf(keep func(key types.NamespacedName, vantagePoints int) bool) []CheckState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var states []CheckState
	if keep == nil {
		states = make([]CheckState, 0, len(s.checks))
	}
	for key, e := range s.checks {
		if keep != nil && !keep(key, e.check.VantagePoints) {
			continue
		}
		outcome, ok := e.latest()
		states = append(states, CheckState{Key: key, VantagePoints: e.check.VantagePoints, Outcome: outcome, HasOutcome: ok, Counts: e.counts})
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
// Options.Owns splits the checks between them.
func (s *Scheduler) NeedLeaderElection() bool { return false }

// Start runs the dispatcher until ctx is done; it implements
// controller-runtime's manager.Runnable. Once the dispatcher stopped it
// records from when no probe was started (see StoppedProbing); before
// returning it lets the probes in flight finish for up to StopGrace,
// cancels those still running, and waits for every goroutine it started. It returns nil after ctx is done, and an error if called
// more than once.
func (s *Scheduler) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("scheduler: Start called more than once")
	}
	ctx, cancel := context.WithCancel(ctx)
	// Probes run on a context of their own, not ctx: a probe started
	// right before ctx ended counts as its turn (see StoppedProbing), so
	// it must get its request out rather than die with ctx.
	probeCtx, cancelProbes := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() {
		cancel()
		s.finishProbes(&wg, cancelProbes)
		s.log.Info("Scheduler stopped")
	}()

	s.log.Info("Scheduler started", "memoryBudget", s.budget, "workers", s.workers, "namespaceBudget", s.slots.limitBytes, "namespaceLimit", s.slots.limit, "initialJitter", s.jitter, "checks", s.Len())
	held := s.dispatch(ctx, probeCtx, &wg)
	s.recordStop(held)
	return nil
}

// jitterLocked returns the delay before the first probe of a check.
func (s *Scheduler) jitterLocked(interval time.Duration) time.Duration {
	bound := min(s.jitter, interval/4)
	if bound <= 0 {
		return 0
	}
	return time.Duration(min(max(s.rand(int64(bound)), 0), int64(bound)-1))
}
