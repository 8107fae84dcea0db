package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing/scheduler"
)

// ControllerName names the controller in logs, metrics and Events (see
// WebCheckerReconciler.Name).
const ControllerName = "webchecker"

const (
	pendingMessage = "Waiting for the first probe result"
	// PendingGrace is how long a new checker (no probe outcome, no Ready
	// condition stored) waits for its first outcome before Pending is
	// written. Most first probes finish well within it, and the outcome's
	// notification writes the result directly: one status write per new
	// checker instead of two. A checker whose first probe is slower, or
	// that cannot be probed yet, shows Pending after the grace.
	PendingGrace = 2 * time.Second
	// conflictRetryDelay is how long to wait before re-reading an object
	// whose status patch lost an optimistic-concurrency race. Conflicts are
	// expected (the informer cache lags behind our own writes), so they are
	// retried quietly instead of being reported as errors.
	conflictRetryDelay = 100 * time.Millisecond
	// maxConditionMessage bounds condition messages (the API allows
	// 32768) and maxEventNote Event notes (the API allows 1024).
	maxConditionMessage = 4096
	maxEventNote        = 1000
)

// DefaultReconcileWorkers is the default of WebCheckerReconciler.Workers.
// A reconcile that writes a status waits for the API server, which takes
// hundreds of milliseconds while thousands of checkers are created: with
// 8 workers (6 for one namespace) a replica wrote about 14 statuses/s, and
// 10,000 new checkers on 3 replicas showed their Ready condition 123 s
// after the last create; with 32, 21 s (e2e/bench/README.md).
const DefaultReconcileWorkers = 32

// WebCheckerReconciler keeps the scheduler's set of checks in line with the
// WebChecker objects and writes the status of those this replica owns.
//
// Every replica schedules every checker it could probe, owned or not: the
// scheduler asks Ownership right before each probe, so a checker gained in
// a hand-over is probed at its next grid point without waiting for a
// reconcile, and a lost one is not probed again. Reconciling a checker that
// is not owned disowns it in the scheduler (a probe in flight is cancelled,
// the outcome forgotten) and leaves its status to the owner; it is
// scheduled without its target, which the reconciler builds (buildCheck,
// the scheduler's Builder) when a turn finds it owned.
type WebCheckerReconciler struct {
	// Name names the controller in logs and metrics; empty means
	// ControllerName. A process that runs several replicas (a test) may
	// tell them apart by it.
	Name string
	// Client reads WebCheckers (from the cache) and patches their status.
	Client client.Client
	// Scheduler runs the probes.
	Scheduler Scheduler
	// Workers is the number of checkers reconciled at once (the
	// controller's MaxConcurrentReconciles); zero means
	// DefaultReconcileWorkers. controller-runtime never reconciles one
	// checker twice at the same time; what the workers share (Scheduler,
	// Ownership, Metrics, the client) is safe for concurrent use.
	Workers int
	// Ownership says which checkers this replica probes and writes.
	Ownership Ownership
	// Recorder records an Event on each Ready transition.
	Recorder events.EventRecorder
	// Trigger delivers probe outcomes (and ownership changes) to the
	// controller.
	Trigger Trigger
	// Clock stamps the Pending condition and measures PendingGrace. Nil
	// means the real clock.
	Clock clock.PassiveClock
	// Secrets reads the Secrets that checkers refer to (the manager's
	// client, which reads from its cache); SetupWithManager then watches
	// Secrets, so that a change takes effect at once. Nil turns Secret
	// access off: no Secret is read or watched, and checkers that refer to
	// one report ReasonSecretAccessDisabled.
	Secrets client.Reader
	// NamespaceSelector, when not nil, limits the checkers served to the
	// namespaces whose labels match it; the manager's cache must hold only
	// those Namespaces (see WatchScope.ApplyTo). Checkers elsewhere are
	// not probed and their status is left alone.
	NamespaceSelector labels.Selector
	// NamespaceEgress reads each checker's Namespace (from the cache) for
	// its checkspec.EgressAllowAnnotation and watches Namespaces, so that a
	// change of the annotation reaches the checkers' targets at once. False
	// gives no namespace an allowance.
	NamespaceEgress bool
	// SecretSelector is the label selector the manager's cache restricts
	// Secrets to (see WatchScope), named when a Secret is not found.
	SecretSelector labels.Selector

	// Checks builds the checkers' probes: the conditions cache and the
	// default proxy. The zero value compiles conditions on every
	// reconcile and uses no proxy.
	Checks checkspec.CheckBuilder
	// Metrics counts status writes. Nil means no metrics.
	Metrics StatusWriteRecorder
	// MetricLabels, when not nil, is given the labels of every scheduled
	// checker (the metrics copy the allowlisted ones onto its series), and
	// label changes are reconciled.
	MetricLabels MetricLabelRecorder
	// Ready, when not nil, learns the Ready condition of every checker
	// this replica owns (the metrics export it as the quorum state).
	Ready ReadyRecorder
	// Loaded, when not nil, learns of every checker planned, so that the
	// replica can wait to join its ring until the checkers that existed
	// when it started are all scheduled.
	Loaded *Loaded
	// Limits bounds what one namespace takes of the reconcile workers,
	// the status writes and the Events (see NamespaceLimits); the zero
	// value bounds nothing. Set it before the first Reconcile.
	Limits NamespaceLimits

	fairOnce sync.Once
	fair     *fairness

	ledgerOnce sync.Once
	writes     *ledger

	// renames bounds the renames of status.shard written at once (see
	// renameTurn).
	renames renameGate
}

// ledger is what the reconciler remembers of its status writes, made on
// first use.
func (r *WebCheckerReconciler) ledger() *ledger {
	r.ledgerOnce.Do(func() { r.writes = newLedger() })
	return r.writes
}

// fairness is the per-namespace state of Limits, made on first use.
func (r *WebCheckerReconciler) fairness() *fairness {
	r.fairOnce.Do(func() { r.fair = newFairness(r.Limits, r.workers()) })
	return r.fair
}

func (r *WebCheckerReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// pausedRetryDelay is how long a reconcile waits while its replica is
// paused (see Ownership.Paused), which lasts at most the safety margin of
// its Lease (2 s by default).
const pausedRetryDelay = 250 * time.Millisecond

// +kubebuilder:rbac:groups=test.network.io,resources=webcheckers,verbs=get;list;watch
// +kubebuilder:rbac:groups=test.network.io,resources=webcheckers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// Namespaces: --namespace-selector and the egress allowance annotation.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile brings one WebChecker's schedule and status up to date. It
// first decides what this replica does with the checker (plan), then
// applies the decision to the scheduler once, then computes the status
// (desiredStatus) and writes it. The owner records the Event of a change
// of the checker's target whether or not it writes the status (see
// reportTargetChange). A checker whose namespace holds its share
// of the reconcile workers (Limits.ReconcileShare) waits in line for one
// of them (see namespaceSlots); a status write over the namespace's share
// or within the checker's MessagePeriod is requeued for later; a write
// that only renames status.shard goes behind every other (see
// renameOnly). While the replica is paused, every reconcile waits.
func (r *WebCheckerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	if r.Ownership.Paused() {
		// Fenced for a moment: the checker is neither lost (its outcome
		// and target stay) nor written; look again once that is decided.
		return ctrl.Result{RequeueAfter: pausedRetryDelay}, nil
	}
	release, ok := r.fairness().enter(key)
	if !ok {
		// The namespace holds its share of the workers: the others'
		// checkers go first, and this one waits in line for a slot.
		return ctrl.Result{}, nil
	}
	// Whatever this reconcile does, its slot, and a rename's turn it was
	// handed and did not take, go on to the next in line.
	defer r.wakeWaiting(ctx, key, release)
	wc := &webcheckerv1alpha1.WebChecker{}
	if err := r.Client.Get(ctx, key, wc); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting WebChecker: %w", err)
		}
		wc = nil
	}
	p, err := r.plan(ctx, key, wc, false)
	if err != nil {
		// A read failed that a retry may fix: the schedule stays as it is.
		return ctrl.Result{}, err
	}
	r.schedule(key, p)
	r.Loaded.plannedKey(key)
	if !p.owned && (!p.probes || p.suspended) {
		return ctrl.Result{}, nil
	}
	if r.ledger().behindOwnWrite(key, wc.ResourceVersion) {
		// The informer cache lags behind this replica's own latest status
		// write: look again once it has caught up.
		return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
	}
	if p.owned {
		if _, _, err := webcheckerv1alpha1.SLOObjective(wc.Labels); err != nil {
			r.event(wc, corev1.EventTypeWarning, EventReasonInvalidSLOObjective, "%v; its alerts use the default objective", err)
		}
	}
	v := statusView{wc: wc, p: p, shard: r.Ownership.ShardID(), now: r.now()}
	var changeWait time.Duration
	if !p.suspended {
		v.latest = r.outcome(wc, p)
		if p.probes {
			r.reportPace(wc, v.latest, p)
			if p.owned {
				// The owner's own outcome, with one vantage point or
				// several; whether or not the status is written.
				changeWait = r.reportTargetChange(wc, v.latest)
			}
		}
	}
	if p.vantage != nil && !p.suspended && p.probes && v.latest != nil {
		// Several vantage points: this replica's own entry first; the
		// owner's quorum counts it.
		fresh, err := r.writeEntry(ctx, v)
		if err != nil {
			return r.handleWriteError(ctx, err)
		}
		v.wc, wc = fresh, fresh
	}
	if !p.owned {
		return ctrl.Result{}, p.done
	}
	if v.maintenance, err = r.maintenanceOf(ctx, wc, v.now); err != nil {
		return ctrl.Result{}, err
	}
	again := sooner(maintenanceRequeue(v.maintenance, v.now), changeWait)
	u := desiredStatus(v)
	if wait := r.writeDelay(wc, u, p); wait > 0 {
		return ctrl.Result{RequeueAfter: sooner(wait, again)}, nil
	}
	release, later, now := r.renameTurn(key, wc.Generation, &wc.Status, &u.status)
	switch {
	case later > 0:
		return renameResult(later), nil
	case !now:
		// Its turn wakes it (see renameGate).
		return ctrl.Result{RequeueAfter: again}, p.done
	}
	defer release()
	if err := r.writeStatus(ctx, wc, u); err != nil {
		return r.handleWriteError(ctx, err)
	}
	return ctrl.Result{RequeueAfter: again}, p.done
}

// sooner is the shorter of two requeue delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// writeDelay is how long the owner waits before writing u, the update of
// wc under p: a Pending checker waits PendingGrace for its first outcome
// from the first reconcile that found it so (measured on Clock; a checker
// resumed after a suspension waits the same way), and a checker with
// several vantage points may wait for those that have not reported yet
// (see holdBack).
func (r *WebCheckerReconciler) writeDelay(wc *webcheckerv1alpha1.WebChecker, u statusUpdate, p plan) time.Duration {
	key := client.ObjectKeyFromObject(wc)
	if u.pending {
		if wait := r.ledger().pendingWait(key, wc.Generation, r.now(), PendingGrace); wait > 0 {
			return wait
		}
	}
	if p.vantage != nil && !p.suspended {
		return r.holdBack(wc, u, p)
	}
	return 0
}

// schedule applies p to the scheduler: the check is upserted, and disowned
// when this replica does not own it, or removed when there is nothing to
// probe.
func (r *WebCheckerReconciler) schedule(key types.NamespacedName, p plan) {
	if p.check == nil {
		r.Scheduler.Remove(key)
		r.Checks.Targets.Forget(key)
		r.ledger().forget(key)
		if r.MetricLabels != nil {
			r.MetricLabels.Delete(key)
		}
		if r.Ready != nil {
			r.Ready.Delete(key)
		}
		return
	}
	if r.MetricLabels != nil {
		// Before the Upsert: the first probe's series carry the labels.
		r.MetricLabels.Set(key, p.labels)
	}
	r.Scheduler.Upsert(*p.check)
	if !p.probes {
		r.Scheduler.Disown(key)
	}
}

// outcome is what the status of wc reports under p: why it is not probed,
// or the newest outcome of its current generation with its streak; nil
// when there is none yet, or when the status was found written by another
// replica since (a take-over): the outcome held then predates that write
// and is never reported, and the streak starts over from the stored
// condition (see scheduler.Scheduler.TakeOver).
func (r *WebCheckerReconciler) outcome(wc *webcheckerv1alpha1.WebChecker, p plan) *scheduler.Outcome {
	key := client.ObjectKeyFromObject(wc)
	if p.notProbed != nil {
		return &scheduler.Outcome{Key: key, Generation: wc.Generation, Result: *p.notProbed, Time: r.now(), Streak: 1}
	}
	o, ok := r.Scheduler.Latest(key)
	ok = ok && o.Generation == wc.Generation
	// With several vantage points each replica's streak leads to its own
	// entry, which no other replica writes. A status that names no
	// replica was never written: nothing predates it.
	shard := wc.Status.Shard
	if p.vantage == nil && shard != "" && shard != r.Ownership.ShardID() && r.ledger().foreignCopy(key, wc.Generation, wc.ResourceVersion) {
		if ok {
			r.Scheduler.TakeOver(key, o.Time)
		}
		return nil
	}
	if !ok {
		return nil
	}
	return &o
}
