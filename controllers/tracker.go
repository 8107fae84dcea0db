package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Tracker keeps, in memory, what the reconciler must remember about each
// checker between probes, and never writes it to the status (that would
// be a write per probe): the streak, how many consecutive probes of the
// current generation had the same verdict (answered or not), for
// spec.failureThreshold and spec.successThreshold. The scheduler notifies
// only a changed outcome, so the Tracker, as the scheduler's Observer,
// sees every probe and asks for a reconcile when a streak reaches its
// threshold.
//
// Run it with Start (it delivers the reconcile requests) and give it to the
// scheduler as an Observer (see Observers). It is safe for concurrent use.
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
	thresholds Thresholds
	// answered is the verdict of the current streak, n its length.
	answered bool
	n        int
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
// threshold (the scheduler already notified its first probe, a change).
// Probes of checkers the
// reconciler does not track are ignored. It never blocks.
func (t *Tracker) ProbeFinished(key types.NamespacedName, res probing.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[key]
	if c == nil {
		return
	}
	answered := metrics.Answered(res)
	if c.n > 0 && c.answered == answered {
		c.n++
	} else {
		c.answered, c.n = answered, 1
	}
	threshold := c.thresholds.Failure
	if answered {
		threshold = c.thresholds.Success
	}
	if c.n == threshold && threshold > 1 {
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
func (t *Tracker) track(key types.NamespacedName, generation int64, thresholds Thresholds) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[key]
	if c == nil || c.generation != generation {
		c = &tracked{generation: generation}
		t.checkers[key] = c
	}
	c.thresholds = thresholds
}

// forget stops tracking the checker (deleted, or no longer owned).
func (t *Tracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.checkers, key)
}

// streak returns how many consecutive probes, o's included, reached o's
// verdict. The latest outcome always counts as one: a probe the Tracker
// has not seen yet (it is told right after the outcome is stored) is not
// lost.
func (t *Tracker) streak(o *scheduler.Outcome) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.checkers[o.Key]
	if c == nil || c.n == 0 || c.answered != metrics.Answered(o.Result) {
		return 1
	}
	return c.n
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

// Observers tells every one of its Observers about every probe, in order.
type Observers []scheduler.Observer

var _ scheduler.Observer = Observers(nil)

// ProbeStarted implements scheduler.Observer.
func (os Observers) ProbeStarted(key types.NamespacedName, lag time.Duration) {
	for _, o := range os {
		o.ProbeStarted(key, lag)
	}
}

// ProbeFinished implements scheduler.Observer.
func (os Observers) ProbeFinished(key types.NamespacedName, res probing.Result) {
	for _, o := range os {
		o.ProbeFinished(key, res)
	}
}
