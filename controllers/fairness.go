package controllers

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// Fair shares: besides the probe workers (which the scheduler shares by
// namespace), a replica's reconcile workers, its status writes and its
// Event queue are shared by every namespace it serves. NamespaceLimits
// bounds what one namespace takes of each, so that a namespace of many
// checkers whose targets change their answer on every probe cannot delay
// the status of the others: a namespace over its share waits (its
// reconciles in line for a slot, its writes requeued for later) while the
// others proceed.

// Defaults of NamespaceLimits that the manager uses.
const (
	// DefaultReconcileNamespaceShare is the default share of the reconcile
	// workers and of the API budget (QPS and burst) one namespace's
	// reconciles and status writes may use.
	DefaultReconcileNamespaceShare = 0.25
	// DefaultEventBurst and DefaultEventInterval bound the Events one
	// namespace records: a burst of 25 (the burst client-go's own spam
	// filter allows one object), then one per 10s.
	DefaultEventBurst    = 25
	DefaultEventInterval = 10 * time.Second
	// DefaultMessagePeriod is how often a checker's status may be
	// rewritten when only a message changed (see
	// NamespaceLimits.MessagePeriod).
	DefaultMessagePeriod = time.Minute
)

// NamespaceLimits bounds what the checkers of one namespace take of what
// every namespace shares in a replica. The zero value bounds nothing.
type NamespaceLimits struct {
	// ReconcileShare is the share of the reconcile workers the checkers of
	// one namespace may hold at once, in (0, 1]: max(1, ceil(share ×
	// workers)), its slots. Beyond them a namespace borrows idle workers,
	// but never the last as many as its slots: those stay for the other
	// namespaces, whose checkers thus never wait behind it. Zero (or 1)
	// lets one namespace hold every worker.
	ReconcileShare float64
	// StatusWriteRate is how many status writes per second one namespace
	// may make on average, StatusWriteBurst how many at once: its share. A
	// write over it waits (its reconcile is requeued for when it may be
	// made). A zero rate bounds nothing.
	StatusWriteRate  float64
	StatusWriteBurst int
	// APIRate and APIBurst are the replica's whole budget of writes (its
	// --kube-api-qps and --kube-api-burst). When set, a namespace over its
	// share may still borrow what nobody else uses of the budget, but never
	// the last StatusWriteBurst writes of it: those stay for the writes of
	// the namespaces within their share, which never wait for one over it.
	// A namespace alone thus writes at the whole budget (a take-over of
	// many checkers is not slowed down), and beside others at its share
	// plus what they leave. Zero holds every namespace to its share.
	APIRate  float64
	APIBurst int
	// EventInterval is how often, after a burst of EventBurst, one
	// namespace may record an Event; Events over it are dropped (the
	// conditions keep the state). Zero bounds nothing. The Event
	// broadcaster's queue is shared (1,000 Events, dropped when full
	// whatever their namespace), and client-go's own spam filter counts
	// per object, not per namespace.
	EventInterval time.Duration
	EventBurst    int
	// MessagePeriod bounds the status writes of one checker whose only
	// change is a detail (the message of Ready or CertificateValid, the
	// HTTP status code, the certificate expiry, or a vantage point's
	// message): at most one per period, the newest detail written once it
	// has passed. A change of a condition's status or reason, or of the
	// generation, is written at once. Zero bounds nothing.
	MessagePeriod time.Duration
}

// String describes the limits for the manager's start-up log.
func (l NamespaceLimits) String() string {
	return fmt.Sprintf("reconcileShare=%g statusWrites=%g/s(burst %d, of %g/s burst %d) events=1/%s(burst %d) messagePeriod=%s",
		l.ReconcileShare, l.StatusWriteRate, l.StatusWriteBurst, l.APIRate, l.APIBurst, l.EventInterval, l.EventBurst, l.MessagePeriod)
}

// fairness holds the per-namespace state of NamespaceLimits. It is safe
// for concurrent use.
type fairness struct {
	limits NamespaceLimits
	slots  *namespaceSlots
	writes *namespaceBuckets
	events *namespaceBuckets
	// budget mirrors the replica's write budget (nil: no borrowing), and
	// reserve is what of it only writes within their share may use.
	budgetMu sync.Mutex
	budget   *rate.Limiter
	reserve  float64
}

// newFairness returns the state of limits for a reconciler of workers.
func newFairness(limits NamespaceLimits, workers int) *fairness {
	f := &fairness{limits: limits}
	if s := limits.ReconcileShare; s > 0 && s < 1 {
		slots := max(1, int(math.Ceil(s*float64(workers))))
		f.slots = newNamespaceSlots(slots, workers-slots)
	}
	if limits.StatusWriteRate > 0 {
		f.writes = newNamespaceBuckets(rate.Limit(limits.StatusWriteRate), max(1, limits.StatusWriteBurst))
		if limits.APIRate > 0 {
			f.budget = rate.NewLimiter(rate.Limit(limits.APIRate), max(1, limits.APIBurst))
			f.reserve = float64(max(1, limits.StatusWriteBurst))
		}
	}
	if limits.EventInterval > 0 {
		f.events = newNamespaceBuckets(rate.Every(limits.EventInterval), max(1, limits.EventBurst))
	}
	return f
}

// enter takes one of the reconcile slots of key's namespace: it returns
// the function that gives it back, or false when the namespace holds its
// share. Then key waits in its namespace's line, and is handed a slot when
// one frees (see woken).
func (f *fairness) enter(key types.NamespacedName) (release func(), ok bool) {
	if f.slots == nil {
		return func() {}, true
	}
	return f.slots.enter(key)
}

// woken returns the checkers handed a reconcile slot since the last call:
// each must be reconciled to take it.
func (f *fairness) woken() []types.NamespacedName {
	if f.slots == nil {
		return nil
	}
	return f.slots.woken()
}

// writeWait is how long the namespace must wait, at now, before its next
// status write; zero when it may write now, and then the write is counted.
// A write that only renames status.shard (rename) leaves a write's worth
// of its namespace's share and of the replica's budget, where they hold
// one, to the writes that change a verdict: those never wait behind the
// renames of a hand-over.
func (f *fairness) writeWait(namespace string, now time.Time, rename bool) time.Duration {
	if f.writes == nil {
		return 0
	}
	var keep float64
	if rename {
		keep = 1
	}
	wait := f.writes.take(namespace, now, keep)
	if f.budget == nil {
		return wait
	}
	f.budgetMu.Lock()
	defer f.budgetMu.Unlock()
	if wait == 0 {
		// Within its share: always, even when that leaves the budget
		// short (the client's own limiter then paces the write).
		f.budget.ReserveN(now, 1)
		return 0
	}
	// Over its share: only what is left above the reserve (and, for a
	// rename, a write more, when the budget can hold it).
	need := f.reserve + 1 + min(keep, max(0, float64(f.budget.Burst())-f.reserve-1))
	tokens := f.budget.TokensAt(now)
	if tokens >= need {
		f.budget.ReserveN(now, 1)
		return 0
	}
	refill := time.Duration((need - tokens) / float64(f.budget.Limit()) * float64(time.Second))
	return max(time.Millisecond, min(wait, refill))
}

// eventAllowed reports whether the namespace may record an Event at now,
// and counts it when so.
func (f *fairness) eventAllowed(namespace string, now time.Time) bool {
	return f.events == nil || f.events.take(namespace, now, 0) == 0
}

// namespaceSlots counts the reconciles in flight, per namespace and in
// all: a namespace holds up to max of them, and more only while fewer
// than borrowBelow run in all. A reconcile refused waits in its
// namespace's line, without a worker or a requeue. A slot that frees goes
// to the oldest waiting checker of its namespace while the namespace is
// within its max, and, while fewer than borrowBelow run in all, to the
// namespaces in line in turn, one checker each; it is then reserved for
// that checker (counted as held) until its reconcile takes it.
type namespaceSlots struct {
	max, borrowBelow int

	mu    sync.Mutex
	held  map[string]int
	total int
	// lines holds the checkers waiting, per namespace; order the
	// namespaces with a line, the next to borrow first.
	lines  map[string]*keyLine
	order  []string
	handed turns
}

func newNamespaceSlots(max, borrowBelow int) *namespaceSlots {
	return &namespaceSlots{max: max, borrowBelow: borrowBelow, held: map[string]int{}, lines: map[string]*keyLine{}}
}

func (s *namespaceSlots) enter(key types.NamespacedName) (func(), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := key.Namespace
	if !s.handed.take(key) {
		// A namespace with a line is at its max: whoever came first goes
		// first.
		if line := s.lines[ns]; line != nil || (s.held[ns] >= s.max && s.total >= s.borrowBelow) {
			if line == nil {
				line = &keyLine{}
				s.lines[ns] = line
				s.order = append(s.order, ns)
			}
			line.push(key)
			return nil, false
		}
		s.held[ns]++
		s.total++
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.total--
		if s.held[ns]--; s.held[ns] <= 0 {
			delete(s.held, ns)
		}
		s.handOn(ns)
	}, true
}

// handOn hands the slots that are free to checkers in line: first those
// of namespace ns, whose reconcile just ended, within its max; then, while
// fewer than borrowBelow run in all, one checker of each namespace in
// line in turn.
func (s *namespaceSlots) handOn(ns string) {
	for s.held[ns] < s.max && s.lines[ns] != nil {
		s.handTo(ns)
	}
	for s.total < s.borrowBelow && len(s.order) > 0 {
		next := s.order[0]
		s.order = append(s.order[1:], next)
		s.handTo(next)
	}
}

// handTo reserves a slot for the oldest checker in ns's line, and drops
// the line once it is empty.
func (s *namespaceSlots) handTo(ns string) {
	line := s.lines[ns]
	key, _ := line.pop()
	s.handed.hand(key)
	s.held[ns]++
	s.total++
	if line.len() == 0 {
		delete(s.lines, ns)
		s.order = slices.DeleteFunc(s.order, func(n string) bool { return n == ns })
	}
}

// woken returns the checkers handed a slot since the last call.
func (s *namespaceSlots) woken() []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handed.drain()
}

// namespaceBuckets keeps a token bucket per namespace. A bucket that has
// refilled is the same as a new one: the full ones are dropped once the
// map has doubled since the last sweep, so the map holds about the
// namespaces active within one refill.
type namespaceBuckets struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	sweepAt int
}

// minSweep is the size of a bucket map below which it is never swept.
const minSweep = 64

func newNamespaceBuckets(limit rate.Limit, burst int) *namespaceBuckets {
	return &namespaceBuckets{limit: limit, burst: burst, buckets: map[string]*rate.Limiter{}, sweepAt: minSweep}
}

// take takes a token from the namespace's bucket at now and returns zero,
// or, when it is empty, takes none and returns how long until it holds one.
// It takes one only if keep more are left after it, when the bucket can
// hold that many.
func (b *namespaceBuckets) take(namespace string, now time.Time, keep float64) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.buckets[namespace]
	if l == nil {
		if len(b.buckets) >= b.sweepAt {
			b.sweep(now)
		}
		l = rate.NewLimiter(b.limit, b.burst)
		b.buckets[namespace] = l
	}
	if keep = min(keep, float64(b.burst-1)); keep > 0 {
		if tokens := l.TokensAt(now); tokens < 1+keep {
			return max(time.Millisecond, time.Duration((1+keep-tokens)/float64(b.limit)*float64(time.Second)))
		}
	}
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// sweep drops the buckets that are full at now.
func (b *namespaceBuckets) sweep(now time.Time) {
	for ns, l := range b.buckets {
		if l.TokensAt(now) >= float64(b.burst) {
			delete(b.buckets, ns)
		}
	}
	b.sweepAt = max(minSweep, 2*len(b.buckets))
}

// deferredWrite is returned instead of writing a status that must wait:
// the namespace is over its share of status writes, only a detail changed
// within the checker's MessagePeriod, or the replica is paused.
// handleWriteError requeues the reconcile after it.
type deferredWrite struct {
	after time.Duration
}

func (d *deferredWrite) Error() string {
	return fmt.Sprintf("status write deferred for %s", d.after)
}

// detailOnly reports whether desired differs from stored only in details:
// the messages of the Ready and CertificateValid conditions and of the
// addresses' results, the HTTP status code and the certificate expiry.
// Nothing else (no condition's
// status or reason, no generation, no shard) changes.
func detailOnly(stored, desired *webcheckerv1alpha1.WebCheckerStatus) bool {
	if meta.FindStatusCondition(stored.Conditions, webcheckerv1alpha1.ConditionReady) == nil {
		return false
	}
	d := desired.DeepCopy()
	d.HTTPStatusCode, d.CertificateExpiry = stored.HTTPStatusCode, stored.CertificateExpiry
	for _, t := range []string{webcheckerv1alpha1.ConditionReady, webcheckerv1alpha1.ConditionCertificateValid} {
		s, c := meta.FindStatusCondition(stored.Conditions, t), meta.FindStatusCondition(d.Conditions, t)
		if s != nil && c != nil && s.Status == c.Status && s.Reason == c.Reason {
			c.Message = s.Message
		}
	}
	if len(d.Addresses) == len(stored.Addresses) {
		for i, a := range stored.Addresses {
			if c := &d.Addresses[i]; c.Address == a.Address && c.Ready == a.Ready && c.Reason == a.Reason {
				c.Message = a.Message
			}
		}
	}
	return equality.Semantic.DeepEqual(stored, d)
}

// entryDetailOnly reports whether the vantage point entry next differs
// from stored (nil for none) only in its message.
func entryDetailOnly(stored *webcheckerv1alpha1.VantagePointStatus, next webcheckerv1alpha1.VantagePointStatus) bool {
	if stored == nil {
		return false
	}
	next.Message = stored.Message
	return equality.Semantic.DeepEqual(*stored, next)
}
