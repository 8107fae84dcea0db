package sharding

// How the Assigner rebuilds the ring: it watches the ring's Leases, judges
// them live on its own clock, publishes the new assignment and reports
// every checker whose ownership changed.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

// Leases are namespaced: the Role lives in the lease namespace (the
// install namespace, webchecker-system by default).
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;delete,namespace=webchecker-system

// Start watches the ring's Leases and re-evaluates ownership whenever one
// changes, when the earliest live Lease expires, and when the Fencer
// signals a change. It blocks until ctx is done. Every evaluation records
// which Leases changed since the last one, at the Clock's now: a Lease
// seen for the first time counts as observed when the Assigner starts.
func (a *Assigner) Start(ctx context.Context) error {
	informer, err := a.opts.Cache.GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return fmt.Errorf("getting lease informer: %w", err)
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { wake(a.leasesChanged) },
		UpdateFunc: func(_, _ any) { wake(a.leasesChanged) },
		DeleteFunc: func(obj any) {
			a.released.noteDeleted(obj, a.opts.Clock.Now())
			wake(a.leasesChanged)
		},
	})
	if err != nil {
		return fmt.Errorf("watching leases: %w", err)
	}
	defer func() { _ = informer.RemoveEventHandler(reg) }()
	if !a.opts.Cache.WaitForCacheSync(ctx) {
		return nil // ctx done
	}

	timer := a.opts.Clock.NewTimer(idleWait)
	defer timer.Stop()
	for {
		next, err := a.evaluate(ctx)
		if err != nil {
			a.opts.Logger.Error(err, "Evaluating ring membership failed; retrying")
			next = a.opts.Clock.Now().Add(retryWait)
		}
		if !a.wait(ctx, timer, next) {
			return nil
		}
	}
}

const (
	// idleWait is how long the Assigner waits for an event when no live
	// Lease is due to expire.
	idleWait = time.Hour
	// retryWait is how long it waits after a failed evaluation.
	retryWait = time.Second
)

// wait blocks until the instant next (none when zero), a Lease event or a
// fencing change, and returns false if ctx ended first. Expiry is not an
// event, so next is when the earliest live Lease expires.
func (a *Assigner) wait(ctx context.Context, timer clock.Timer, next time.Time) bool {
	if !timer.Stop() {
		select {
		case <-timer.C():
		default:
		}
	}
	d := idleWait
	if !next.IsZero() {
		d = next.Sub(a.opts.Clock.Now())
		if d <= 0 {
			// Already due: evaluate again at once (a fake clock would
			// not fire a timer of zero length until it is stepped).
			return ctx.Err() == nil
		}
	}
	timer.Reset(d)
	select {
	case <-ctx.Done():
		return false
	case <-a.leasesChanged:
	case <-a.opts.Fencer.FencingChanges():
	case <-timer.C():
	}
	return true
}

// evaluate rebuilds the assignment from the Leases in the cache and the
// fencing state, and notifies every checker whose ownership changed. It
// returns when the earliest live Lease expires.
func (a *Assigner) evaluate(ctx context.Context) (time.Time, error) {
	var leases coordinationv1.LeaseList
	if err := a.opts.Cache.List(ctx, &leases, client.InNamespace(a.opts.Namespace), client.MatchingLabels(labelsForRing(a.opts.RingName))); err != nil {
		return time.Time{}, fmt.Errorf("listing leases: %w", err)
	}
	now := a.opts.Clock.Now()
	a.observed = membership.Observe(a.observed, leases.Items, now)
	a.collectStale(ctx, leases.Items, now)
	members, nextExpiry := a.observed.Live(leases.Items, now)
	// A member that announced when it leaves is dropped then, on this
	// replica's timer: its Lease event may reach this replica late.
	members, leaving, nextLeave := membership.Leaving(leases.Items, members, a.opts.ID, now)
	if !nextLeave.IsZero() && (nextExpiry.IsZero() || nextLeave.Before(nextExpiry)) {
		nextExpiry = nextLeave
	}
	fenced, at, settled := a.fencing(ctx, now)
	if !settled.IsZero() && (nextExpiry.IsZero() || settled.Before(nextExpiry)) {
		nextExpiry = settled
	}
	// Publish before listing the checkers: a checker created from now on
	// is reconciled under the new assignment, and one created before is in
	// the list below. Either way none is missed.
	next := a.publish(members, membership.Zones(leases.Items, members), leaving, fenced, at)
	if next == a.notified {
		return nextExpiry, nil
	}

	var checkers []Checker
	if !a.notified.fenced || !next.fenced {
		// (Fenced before and after, this replica probes nothing either
		// way: no checker needs listing.)
		var err error
		if checkers, err = a.opts.Keys(ctx); err != nil {
			// a.notified stays behind: the next evaluation reports the
			// changes.
			return time.Time{}, fmt.Errorf("listing checkers: %w", err)
		}
	}
	gained, lost, regrouped := ownershipChanges(a.notified, next, a.opts.ID, checkers)
	before := a.notified
	a.notified = next
	// took is how long the evaluation has run, listing and comparing
	// every checker, since it read the Leases: with the time the Lease
	// event took to arrive, how late this replica acts on a change.
	a.opts.Logger.Info("Ring changed", "members", next.ring.Members(), "zones", next.zones, "fenced", next.fenced,
		"gained", len(gained), "lost", len(lost), "regrouped", len(regrouped), "checkers", len(checkers),
		"took", a.opts.Clock.Since(now))
	a.notifyChanges(ctx, before, next, gained, lost, regrouped, a.ownLease(leases.Items), a.leftMembers(leases.Items, leaving, now), now)
	return nextExpiry, nil
}

// fencing returns whether the assignment published at now is fenced,
// and, if so, since when (the start of the fencing when it was held back:
// a turn skipped since may need making up; else now). While this replica
// is fenced for less than FenceSettle it returns false, and when that
// fencing is due to be published as settled. A fencing that ended before
// it was published is reported to Resume (see pause).
func (a *Assigner) fencing(ctx context.Context, now time.Time) (fenced bool, at, settled time.Time) {
	// The count first: a fencing that begins between the reads is seen as
	// ongoing, or at the next evaluation, never missed.
	count := a.opts.Fencer.Fencings()
	fenced = a.opts.Fencer.Fenced()
	since := a.opts.Fencer.FencedSince()
	began := count - a.fencings
	a.fencings = count
	defer func() { a.evaluatedAt = a.opts.Clock.Now() }()
	if a.notified.fenced || a.opts.FenceSettle <= 0 || (fenced && since.IsZero()) {
		a.pausedSince = time.Time{}
		return fenced, now, time.Time{}
	}
	if !fenced {
		if began > 0 || !a.pausedSince.IsZero() {
			a.resume(ctx, a.pause(began, false, since))
		}
		return false, now, time.Time{}
	}
	paused := a.pause(began, true, since)
	if settled = since.Add(a.opts.FenceSettle); now.Before(settled) {
		a.pausedSince = paused
		return false, now, settled
	}
	// Published: gaining its checkers back when it ends makes up the
	// turns skipped since it began (see unprobedSince).
	a.pausedSince = time.Time{}
	return true, paused, time.Time{}
}

// pause returns the earliest instant from which this replica may have
// skipped turns for fencings not published, the one ongoing (fenced, since
// since) among them: the start of the one an evaluation found ongoing, and,
// for those that began since the latest evaluation (began) and are not
// the ongoing one, that evaluation's end. The ring has not changed since
// then, so every turn of a checker owned now skipped since was skipped
// for a fencing.
func (a *Assigner) pause(began uint64, fenced bool, since time.Time) time.Time {
	from := a.pausedSince
	earlier := func(t time.Time) {
		if !t.IsZero() && (from.IsZero() || t.Before(from)) {
			from = t
		}
	}
	if began > 1 || (began == 1 && !fenced) {
		earlier(a.evaluatedAt)
	} else if fenced {
		earlier(since)
	}
	return from
}

// resume reports to Resume a fencing that ended before it was published,
// which skipped turns from since on.
func (a *Assigner) resume(ctx context.Context, since time.Time) {
	a.pausedSince = time.Time{}
	a.opts.Logger.Info("Fencing ended before it was published: resuming", "since", since)
	if a.opts.Resume != nil && !since.IsZero() {
		a.opts.Resume(ctx, since)
	}
}

// leftMembers returns what this replica knows at now of the members that
// may have left the ring, whose Leases are now leases, leaving those that
// left when they announced (see leftMembers).
func (a *Assigner) leftMembers(leases []coordinationv1.Lease, leaving map[string]time.Time, now time.Time) leftMembers {
	left := leftMembers{
		leaving:  leaving,
		lastSeen: make(map[string]time.Time, len(a.observed)),
		released: a.released.stoppedAt(leases, now.Add(-a.opts.StaleAfter)),
	}
	for id, o := range a.observed {
		left.lastSeen[id] = o.At
	}
	return left
}

// notifyChanges notifies the changes from before to after decided at now,
// lost first: stop probing what is no longer ours before taking more.
func (a *Assigner) notifyChanges(ctx context.Context, before, after *assignment, gained, lost, regrouped []Checker, own ownLease, left leftMembers, now time.Time) {
	for _, c := range lost {
		a.opts.Notify(ctx, Change{Key: c.Key})
	}
	for _, c := range gained {
		change := Change{Key: c.Key, Probes: true}
		// With several vantage points nothing is taken over: see
		// Change.UnprobedSince.
		if c.VantagePoints <= 1 {
			change.UnprobedSince, change.Tolerance = unprobedSince(before, a.opts.ID, c.Key, after, left, own, now)
		}
		a.opts.Notify(ctx, change)
	}
	for _, c := range regrouped {
		a.opts.Notify(ctx, Change{Key: c.Key, Probes: true, Regrouped: true})
	}
}

// ownLease returns when this replica acquired its own Lease, as its
// Heartbeat wrote it (on this replica's clock), and the Lease's duration;
// zero values if the Lease is not among leases or held by another.
func (a *Assigner) ownLease(leases []coordinationv1.Lease) ownLease {
	for i := range leases {
		l := &leases[i]
		if l.Name == a.opts.ID && ptr.Deref(l.Spec.HolderIdentity, "") == a.opts.ID && l.Spec.AcquireTime != nil {
			return ownLease{acquired: l.Spec.AcquireTime.Time, duration: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second}
		}
	}
	return ownLease{}
}

// publish makes the ring of members, their zones and fenced the current
// assignment at now, unless they already are, and returns the current
// assignment. leaving holds the members that left at the instants they
// announced (see membership.Leaving). A change of members or of zones is a
// rebalance; zones is not modified afterwards.
func (a *Assigner) publish(members []string, zones map[string]string, leaving map[string]time.Time, fenced bool, now time.Time) *assignment {
	current := a.current.Load()
	sameMembers := slices.Equal(members, current.ring.Members())
	sameZones := maps.Equal(zones, current.zones)
	if sameMembers && sameZones && fenced == current.fenced {
		return current
	}
	next := &assignment{ring: current.ring, zones: current.zones, fenced: fenced, at: now,
		leftAt: current.leftAt, leftFrom: current.leftFrom}
	if !sameMembers {
		next.ring = ring.New(members, a.opts.VirtualNodes)
		next.leftAt, next.leftFrom = time.Time{}, nil
		for id, at := range leaving {
			if current.ring.Contains(id) && at.After(next.leftAt) {
				next.leftAt, next.leftFrom = at, current.ring
			}
		}
	}
	if !sameZones {
		next.zones = zones
	}
	if !sameMembers || !sameZones {
		a.rebalances.Add(1)
	}
	a.current.Store(next)
	return next
}

// collectStale deletes the Leases of members long gone (unchanged for
// StaleAfter past their expiry, on this replica's clock), so that crashed
// replicas (new pod names each time) do not leave Leases behind forever.
// Every replica may try; NotFound and Conflict mean another one did.
func (a *Assigner) collectStale(ctx context.Context, leases []coordinationv1.Lease, now time.Time) {
	if a.opts.Deleter == nil {
		return
	}
	for _, l := range a.observed.Stale(leases, now, a.opts.StaleAfter) {
		err := a.opts.Deleter.Delete(ctx, &l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		switch {
		case err == nil:
			a.opts.Logger.Info("Deleted stale lease", "lease", l.Namespace+"/"+l.Name)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			a.opts.Logger.Error(err, "Deleting stale lease failed", "lease", l.Namespace+"/"+l.Name)
		}
	}
}

// wake sends on a signal channel of capacity 1 without blocking: a signal
// already pending stands for this one too.
func wake(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
