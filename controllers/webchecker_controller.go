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

// ControllerName names the controller in logs, metrics and Events.
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
const DefaultReconcileWorkers = 8

// WebCheckerReconciler keeps the scheduler's set of checks in line with the
// WebChecker objects and writes the status of those this replica owns.
//
// Every replica schedules every checker it could probe, owned or not: the
// scheduler asks Ownership right before each probe, so a checker gained in
// a hand-over is probed at its next grid point without waiting for a
// reconcile, and a lost one is not probed again. Reconciling a checker that
// is not owned disowns it in the scheduler (a probe in flight is cancelled,
// the outcome forgotten) and leaves its status to the owner.
type WebCheckerReconciler struct {
	// Client reads WebCheckers (from the cache) and patches their status.
	Client client.Client
	// Scheduler runs the probes.
	Scheduler Scheduler
	// Workers is the number of checkers reconciled at once (the
	// controller's MaxConcurrentReconciles); zero means
	// DefaultReconcileWorkers. controller-runtime never reconciles one
	// checker twice at the same time; what the workers share (Scheduler,
	// Ownership, Tracker, Metrics, the client) is safe for concurrent use.
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
	// Tracker counts consecutive probes for the thresholds and remembers
	// which outcome a take-over made stale; it must be the scheduler's
	// Observer (see scheduler.Observers). SetupWithManager requires it and runs it;
	// without it (a reconciler called directly) every threshold acts as 1.
	Tracker *Tracker
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

// +kubebuilder:rbac:groups=test.network.io,resources=webcheckers,verbs=get;list;watch
// +kubebuilder:rbac:groups=test.network.io,resources=webcheckers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// Namespaces: --namespace-selector and the egress allowance annotation.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile brings one WebChecker's schedule and status up to date. It
// first decides what this replica does with the checker (plan), then
// applies the decision to the scheduler once, then writes the status. A
// checker whose namespace holds its share of the reconcile workers
// (Limits.ReconcileShare) is requeued for later, and so is a status write
// over the namespace's share or within the checker's MessagePeriod.
func (r *WebCheckerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	release, ok := r.fairness().enter(key.Namespace)
	if !ok {
		// The namespace holds its share of the workers: the others'
		// checkers go first.
		return ctrl.Result{RequeueAfter: reconcileDeferDelay}, nil
	}
	defer release()
	wc := &webcheckerv1alpha1.WebChecker{}
	if err := r.Client.Get(ctx, key, wc); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting WebChecker: %w", err)
		}
		wc = nil
	}
	p, err := r.plan(ctx, key, wc)
	if err != nil {
		// A read failed that a retry may fix: the schedule stays as it is.
		return ctrl.Result{}, err
	}
	r.schedule(key, p)
	r.Loaded.plannedKey(key)
	if !p.owned && (!p.probes || p.suspended) {
		return ctrl.Result{}, nil
	}
	if r.Tracker != nil && r.Tracker.behindOwnWrite(key, wc.ResourceVersion) {
		// The informer cache lags behind this replica's own latest status
		// write: look again once it has caught up.
		return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
	}
	if p.owned {
		if _, _, err := webcheckerv1alpha1.SLOObjective(wc.Labels); err != nil {
			r.event(wc, corev1.EventTypeWarning, EventReasonInvalidSLOObjective, "%v; its alerts use the default objective", err)
		}
	}
	if p.vantage != nil && !p.suspended {
		return r.reconcileQuorum(ctx, wc, p)
	}
	if p.suspended {
		if err := r.writeSuspended(ctx, wc); err != nil {
			return r.handleWriteError(ctx, err)
		}
		return ctrl.Result{}, nil
	}
	latest := r.outcome(wc, p)
	if wait := r.pendingWait(key, wc, latest); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.writeStatus(ctx, wc, latest, p); err != nil {
		return r.handleWriteError(ctx, err)
	}
	return ctrl.Result{}, p.done
}

// schedule applies p to the scheduler and the Tracker: the check is
// upserted, and disowned when this replica does not own it, or removed
// when there is nothing to probe.
func (r *WebCheckerReconciler) schedule(key types.NamespacedName, p plan) {
	if p.check == nil {
		r.Scheduler.Remove(key)
		if r.Tracker != nil {
			r.Tracker.forget(key)
		}
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
	if r.Tracker != nil {
		r.Tracker.track(key, p.check.Generation, p.thresholds)
	}
	if !p.probes {
		r.Scheduler.Disown(key)
		if r.Tracker != nil {
			r.Tracker.disowned(key)
		}
	}
}

// pendingWait is how much longer to wait before writing Pending for wc,
// whose newest outcome is latest: non-zero only while a checker with no
// outcome and no stored Ready condition is within PendingGrace of the
// first reconcile that found it so (measured on Clock). A checker resumed
// after a suspension waits the same way. Without a Tracker Pending is
// written at once.
func (r *WebCheckerReconciler) pendingWait(key types.NamespacedName, wc *webcheckerv1alpha1.WebChecker, latest *reported) time.Duration {
	if latest != nil || r.Tracker == nil || !awaitingFirstResult(wc) {
		return 0
	}
	return r.Tracker.pendingWait(key, r.now(), PendingGrace)
}

// reported is what the status reports: an outcome, and for a probe the
// length of its streak (see Tracker).
type reported struct {
	scheduler.Outcome
	// streak counts the consecutive probes, this one included, with the
	// same verdict; 1 for a checker that is not probed.
	streak int
}

// outcome is what the status of wc reports under p: why it is not probed,
// the newest outcome of its current generation, or nil when there is none
// yet or the newest one is older than the stored status (held since before
// another replica wrote it).
func (r *WebCheckerReconciler) outcome(wc *webcheckerv1alpha1.WebChecker, p plan) *reported {
	key := client.ObjectKeyFromObject(wc)
	if p.notProbed != nil {
		return &reported{Outcome: scheduler.Outcome{Key: key, Generation: wc.Generation, Result: *p.notProbed, Time: r.now()}, streak: 1}
	}
	o, ok := r.Scheduler.Latest(key)
	if !ok || o.Generation != wc.Generation {
		o, ok = scheduler.Outcome{}, false
	}
	if r.Tracker == nil {
		if !ok {
			return nil
		}
		return &reported{Outcome: o, streak: 1}
	}
	if p.vantage == nil && wc.Status.Shard != r.Ownership.ShardID() {
		// Another replica wrote the status (or nobody yet): the outcome
		// held now predates it, and the streak starts over from the stored
		// condition. (With several vantage points each replica's streak
		// leads to its own entry, which no other replica writes.)
		var held *scheduler.Outcome
		if ok {
			held = &o
		}
		r.Tracker.foreignStatus(key, wc.ResourceVersion, held)
	}
	if !ok {
		return nil
	}
	n, stale := r.Tracker.streak(&o)
	if stale {
		return nil
	}
	return &reported{Outcome: o, streak: n}
}
