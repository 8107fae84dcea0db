package sharding

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Checker is a WebChecker as the Assigner needs to know it: its key, and
// how many replicas probe it.
type Checker struct {
	// Key is the checker's namespace and name.
	Key types.NamespacedName
	// VantagePoints is how many replicas probe the checker (its
	// spec.vantagePoints); below 1 means 1.
	VantagePoints int
}

// VantagePoint is one replica that probes a checker.
type VantagePoint struct {
	// Shard is the replica's shard id.
	Shard string
	// Zone is the replica's zone as its Lease says, "" when unknown.
	Zone string
}

// Change is a change of this replica's part in probing one checker.
type Change struct {
	// Key is the checker.
	Key types.NamespacedName
	// Probes is whether this replica probes the checker after the change:
	// it is one of its vantage points (its owner, for a checker with one)
	// and not fenced. True for a checker gained (or regrouped), false for
	// one lost.
	Probes bool
	// Regrouped is true when this replica probes the checker before and
	// after the change, but its set of vantage points (its members, or
	// their order, so its owner) changed: nothing moves in the scheduler,
	// but the status must be re-evaluated (the owner removes the entries
	// of members that left, a new owner starts writing Ready). Only a
	// checker with more than one vantage point is ever regrouped.
	Regrouped bool
	// UnprobedSince, for a checker gained with one vantage point, is the
	// earliest moment (on the Assigner's Clock) from which its previous
	// owner may have stopped probing it: turns skipped here since then may
	// have been probed by nobody (see scheduler.Scheduler.Gained). Zero
	// when nothing can have been missed, and for a checker with several
	// vantage points: a replica that becomes one of them takes over nobody
	// else's turns, it starts an entry of its own in the status (the
	// others' entries, and the quorum they make, carry on meanwhile), so
	// it has no turn to make up.
	UnprobedSince time.Time
	// Tolerance, for a checker gained with one vantage point, is how much
	// longer than an interval the checker may go unprobed without a turn
	// being made up: for a replica that joins, its lease duration, what a
	// crash may cost anyway; zero otherwise (always zero with several
	// vantage points, see UnprobedSince).
	Tolerance time.Duration
}

// VantagePoints returns the replicas that probe key when it asks for k
// vantage points, under the current ring: min(max(k, 1), members) of them,
// the owner first, then the next distinct members of the ring's walk,
// preferring zones not chosen yet (see ring.Ring.VantagePoints), each with
// its zone. Every replica that sees the same Leases computes the same
// list. It is empty while the ring is. It does not look at fencing: a
// fenced replica stays in the sets of the others until its Lease expires.
// It is safe for concurrent use.
func (a *Assigner) VantagePoints(key types.NamespacedName, k int) []VantagePoint {
	current := a.current.Load()
	members := current.vantagePoints(key, k)
	points := make([]VantagePoint, len(members))
	for i, m := range members {
		points[i] = VantagePoint{Shard: m, Zone: current.zoneOf(m)}
	}
	return points
}

// Probes reports whether this replica probes key, which asks for k vantage
// points, now: it is not fenced (read from the Fencer, as Owns does) and is
// among VantagePoints(key, k). For k <= 1 it is Owns(key), at the same cost
// (it allocates nothing more). It is safe for concurrent use, and cheap
// enough to be asked before every probe.
func (a *Assigner) Probes(key types.NamespacedName, k int) bool {
	if k <= 1 {
		return a.Owns(key)
	}
	return !a.opts.Fencer.Fenced() && a.current.Load().probes(a.opts.ID, key, k)
}

// ProbesTurn reports whether this replica probes the turn of key (asking
// for k vantage points) due at due: Probes(key, k), except that a turn of
// a checker taken over from a member that left the ring at the instant it
// announced (membership.AnnotationLeavingAt), due before that instant, is
// not probed: that member probes every turn due before it, and a
// dispatcher that reaches such a turn late, after this replica dropped the
// member, would probe it a second time. With several vantage points
// nothing is taken over (see Change.UnprobedSince), and it is Probes. It
// is safe for concurrent use and as cheap as Probes.
func (a *Assigner) ProbesTurn(key types.NamespacedName, k int, due time.Time) bool {
	if k > 1 {
		return a.Probes(key, k)
	}
	return !a.opts.Fencer.Fenced() && a.current.Load().ownsTurn(a.opts.ID, key, due)
}

// Zone returns this replica's zone (AssignerOptions.Zone), "" when unknown.
func (a *Assigner) Zone() string { return a.opts.Zone }
