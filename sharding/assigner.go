package sharding

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

// Fencer tells whether this replica must stand down (its own Lease could not
// be renewed in time). membership.Heartbeat implements it.
type Fencer interface {
	// Fenced reports whether this replica is fenced now.
	Fenced() bool
	// FencedSince returns when the current fencing began; zero when the
	// replica is not fenced, or has not joined the ring yet.
	FencedSince() time.Time
	// Fencings counts the times this replica fenced itself after it had
	// joined the ring (not the fencing it starts in).
	Fencings() uint64
	// FencingChanges receives a value, without blocking the Fencer, after
	// every change of Fenced; several changes may arrive as one. The
	// Assigner is its only reader.
	FencingChanges() <-chan struct{}
}

// AssignerOptions configure an Assigner.
type AssignerOptions struct {
	// ID is this replica's shard id. Required.
	ID string
	// Zone is this replica's zone, as its Heartbeat publishes it on its
	// Lease (membership.HeartbeatOptions.Zone); "" when unknown. Zone
	// returns it; the sets of vantage points are computed from the zones
	// the Leases carry, this replica's included, never from this field.
	Zone string
	// Cache serves the ring's Leases; it must be restricted to the lease
	// namespace and the ring's label (see LeaseCacheOptions). Required.
	Cache cache.Cache
	// Namespace and RingName select the ring's Leases. Required.
	Namespace, RingName string
	// VirtualNodes per member; default ring.DefaultVirtualNodes.
	VirtualNodes int
	// Fencer reports this replica's own fencing; the Assigner re-evaluates
	// ownership whenever it signals a change. Required.
	Fencer Fencer
	// Keys lists every WebChecker with the number of vantage points it
	// asks for, so that changes can be reported per checker. Required.
	Keys func(ctx context.Context) ([]Checker, error)
	// Notify is called for each checker that this replica starts or stops
	// probing, or whose vantage points changed while this replica probes
	// it (see Change), lost ones first; Owns, Probes and VantagePoints
	// already answer the new assignment. It may block. Required.
	Notify func(ctx context.Context, change Change)
	// FenceSettle is how long a fencing of this replica lasts before it
	// is published as a change of its ring (every checker it owns lost,
	// and gained back when it ends); zero publishes it at once. Owns and
	// Probes are false from the first instant of a fencing either way.
	// Set to the Heartbeat's SafetyMargin, a fencing is published before
	// another replica can take anything over (the others see this
	// replica's Lease expire no earlier than SafetyMargin after it fenced
	// itself), and a shorter one, a renewal a little late, costs no ring
	// change: the replica is paused (see Paused), and Resume makes up
	// what it skipped.
	FenceSettle time.Duration
	// Resume, when set, is called after a fencing that ended before it
	// was published (see FenceSettle), with an instant no later than its
	// start: the turns this replica skipped since, of the checkers it
	// owns, were probed by nobody. It may block.
	Resume func(ctx context.Context, since time.Time)
	// Deleter, when set, deletes Leases that have been expired for longer
	// than StaleAfter (left behind by replicas that crashed), with a
	// precondition on their resourceVersion so that a Lease renewed in the
	// meantime survives. Expiry and staleness are both judged on Clock,
	// from when this replica observed each Lease change.
	Deleter client.Writer
	// StaleAfter defaults to one minute.
	StaleAfter time.Duration
	// Clock stamps the observation of every Lease change and tells when
	// Leases expire: a Lease is live until its leaseDurationSeconds after
	// this replica observed it change (see membership.Observations), never
	// by comparing its renewTime with this clock. Default the real clock.
	Clock clock.WithTicker
	// Logger logs membership changes.
	Logger logr.Logger
}

// Assigner decides the ownership of a replica among several: it builds a
// consistent-hash ring from the live members' Leases and owns the checkers
// the ring assigns to this replica, unless the replica is fenced; of a
// checker that asks for several vantage points, it probes those whose
// vantage points, on the ring and by the zones the Leases carry, include
// this replica. It reports every change through Notify. It is a
// controller-runtime Runnable that runs on every replica.
type Assigner struct {
	opts    AssignerOptions
	current atomic.Pointer[assignment]
	// leasesChanged is signalled by the lease informer's handlers.
	leasesChanged chan struct{}
	// rebalances counts the ring's membership changes.
	rebalances atomic.Uint64
	// notified is the assignment whose ownership changes have been
	// reported; only the Start goroutine uses it.
	notified *assignment
	// observed is every Lease of the ring as last seen changed, with the
	// instant on this replica's clock; only the Start goroutine uses it.
	observed membership.Observations
	// released notes the members that released their Lease on shutdown.
	released releases
	// fencings is the Fencer's count of fencings at the latest
	// evaluation, evaluatedAt the instant that evaluation ended, and
	// pausedSince the start of the fencing it found unpublished (zero
	// when none); only the Start goroutine uses them.
	fencings    uint64
	evaluatedAt time.Time
	pausedSince time.Time
}

// NewAssigner validates opts and returns an Assigner that owns nothing until
// it has started and seen its own live Lease.
func NewAssigner(opts AssignerOptions) (*Assigner, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.VirtualNodes <= 0 {
		opts.VirtualNodes = ring.DefaultVirtualNodes
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = time.Minute
	}
	if opts.ID == "" || opts.Cache == nil || opts.Namespace == "" || opts.RingName == "" ||
		opts.Fencer == nil || opts.Keys == nil || opts.Notify == nil {
		return nil, errors.New("invalid assigner options: ID, Cache, Namespace, RingName, Fencer, Keys and Notify are required")
	}
	a := &Assigner{opts: opts, leasesChanged: make(chan struct{}, 1)}
	a.notified = &assignment{ring: ring.New(nil, opts.VirtualNodes), fenced: true}
	a.current.Store(a.notified)
	return a, nil
}

// LeaseCacheOptions restricts a cache to the Leases of one ring, so that a
// replica neither needs access to nor stores any other Lease.
func LeaseCacheOptions(namespace, ringName string) cache.ByObject {
	return cache.ByObject{
		Namespaces: map[string]cache.Config{namespace: {}},
		Label:      labels.SelectorFromSet(labelsForRing(ringName)),
	}
}

// ShardID returns this replica's shard id.
func (a *Assigner) ShardID() string { return a.opts.ID }

// Owns reports whether this replica owns key under the current ring and is
// not fenced. Fencing is read from the Fencer itself, so it takes effect on
// the next probe or status write, before the ring is re-evaluated.
func (a *Assigner) Owns(key types.NamespacedName) bool {
	return !a.opts.Fencer.Fenced() && a.current.Load().owns(a.opts.ID, key)
}

// Fenced reports whether this replica is fenced now (see Fencer).
func (a *Assigner) Fenced() bool { return a.opts.Fencer.Fenced() }

// Paused reports whether this replica is fenced while its fencing is not
// yet a change of its ring (see AssignerOptions.FenceSettle): the checkers
// it owns stay its own, but it neither probes them nor writes their status
// until the fencing ends, or is published and they are lost.
func (a *Assigner) Paused() bool {
	return a.opts.Fencer.Fenced() && !a.current.Load().fenced
}

// Fencings counts the times this replica fenced itself after it had
// joined the ring, as its Fencer reports.
func (a *Assigner) Fencings() uint64 { return a.opts.Fencer.Fencings() }

// RingChanged returns when this replica's view of the ring (its members,
// their zones, or its own fencing) last changed, on the Clock; zero before
// the first evaluation. A fencing counts once published, from its start
// (see AssignerOptions.FenceSettle).
func (a *Assigner) RingChanged() time.Time { return a.current.Load().at }

// Members returns the live members of the current ring.
func (a *Assigner) Members() []string { return a.current.Load().ring.Members() }

// Rebalances returns how many times the ring's membership, or the zone of
// one of its members, changed since the Assigner started: every change
// moves checkers (or vantage points) between replicas.
func (a *Assigner) Rebalances() uint64 { return a.rebalances.Load() }

// NeedLeaderElection returns false: every replica computes its own view.
func (a *Assigner) NeedLeaderElection() bool { return false }

func labelsForRing(ringName string) map[string]string {
	return map[string]string{membership.LabelRing: ringName}
}
