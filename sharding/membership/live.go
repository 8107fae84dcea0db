package membership

import (
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// LabelRing labels a Lease with the name of the ring it belongs to.
const LabelRing = "test.network.io/ring"

// LabelZone labels a Lease with the zone of the replica that holds it (its
// --zone); a Lease without it is of a replica whose zone is unknown.
const LabelZone = "test.network.io/zone"

// AnnotationProbingStopped is set by a replica on the Lease it releases on
// shutdown, right before deleting it: the instant (RFC 3339, nanoseconds,
// on its own clock) from which it started no probe, every turn due before
// it having been started (see HeartbeatOptions.ProbingStopped). The others
// read it from the deleted Lease (ProbingStoppedAt) and take over from
// exactly that turn of each checker's grid, so that no turn is probed
// twice nor missed. The instant names a point of the checkers' grids, which
// every replica computes from the time of day alike; it is never compared
// with a reader's clock to judge liveness.
const AnnotationProbingStopped = "test.network.io/probing-stopped-at"

// ProbingStoppedAt reads AnnotationProbingStopped from a released Lease;
// ok is false when it has none, or one that is not an RFC 3339 time.
func ProbingStoppedAt(l *coordinationv1.Lease) (at time.Time, ok bool) {
	v, set := l.Annotations[AnnotationProbingStopped]
	if !set {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	return at, err == nil
}

// Member is a ring member as described by its Lease.
type Member struct {
	// ID is the member's shard id (the Lease's holderIdentity).
	ID string
	// RenewTime is when the member last renewed its Lease.
	RenewTime time.Time
	// Duration is how long the Lease is valid after RenewTime.
	Duration time.Duration
}

// Expiry is renewTime + duration, on the writer's clock.
func (m Member) Expiry() time.Time { return m.RenewTime.Add(m.Duration) }

// MemberOf reads the member a Lease describes. ok is false for a Lease that
// describes no member: no holder, no renew time, or no positive duration
// (for example a released one).
func MemberOf(lease *coordinationv1.Lease) (m Member, ok bool) {
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" || spec.RenewTime == nil ||
		spec.LeaseDurationSeconds == nil || *spec.LeaseDurationSeconds <= 0 {
		return Member{}, false
	}
	return Member{
		ID:        *spec.HolderIdentity,
		RenewTime: spec.RenewTime.Time,
		Duration:  time.Duration(*spec.LeaseDurationSeconds) * time.Second,
	}, true
}

// Live returns the sorted ids of the members whose Leases are live at now
// by their renewTime (renewTime + leaseDurationSeconds after now), and the
// earliest instant at which one of them expires (zero when none is live).
// A Lease being deleted is not live.
//
// It compares the writer's clock with the reader's, so it is right only
// where both are one clock (a test that runs every replica on one
// machine). Replicas judge each other with Observations.Live, on the
// observer's clock.
func Live(leases []coordinationv1.Lease, now time.Time) (ids []string, nextExpiry time.Time) {
	return liveBy(leases, now, func(_ *coordinationv1.Lease, m Member) time.Time { return m.Expiry() })
}

// liveBy returns the sorted ids of the members whose Leases expire after
// now, by expiry, and the earliest of those expiries (zero when none is
// live). A Lease being deleted is not live.
func liveBy(leases []coordinationv1.Lease, now time.Time, expiry func(*coordinationv1.Lease, Member) time.Time) (ids []string, nextExpiry time.Time) {
	for i := range leases {
		if leases[i].DeletionTimestamp != nil {
			continue
		}
		m, ok := MemberOf(&leases[i])
		if !ok {
			continue
		}
		until := expiry(&leases[i], m)
		if !now.Before(until) {
			continue
		}
		if !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID)
		}
		if nextExpiry.IsZero() || until.Before(nextExpiry) {
			nextExpiry = until
		}
	}
	slices.Sort(ids)
	return ids, nextExpiry
}

// Zones returns the zone each member of ids published on its Lease (the
// LabelZone label of a Lease it holds), by id. Members whose zone is
// unknown are left out; the result is nil when no zone is known. ids must
// be sorted (as Live returns them). A Lease being deleted, or describing no
// member, is ignored. Should a member hold several Leases, the one named
// after it wins, else the first by name: the choice depends only on the
// Leases, so every replica that sees them makes the same.
func Zones(leases []coordinationv1.Lease, ids []string) map[string]string {
	chosen := map[string]*coordinationv1.Lease{}
	for i := range leases {
		l := &leases[i]
		if l.DeletionTimestamp != nil {
			continue
		}
		m, ok := MemberOf(l)
		if !ok {
			continue
		}
		if _, found := slices.BinarySearch(ids, m.ID); !found {
			continue
		}
		if prev, ok := chosen[m.ID]; !ok || preferredLease(l, prev, m.ID) {
			chosen[m.ID] = l
		}
	}
	var zones map[string]string
	for id, l := range chosen {
		if zone := l.Labels[LabelZone]; zone != "" {
			if zones == nil {
				zones = make(map[string]string, len(chosen))
			}
			zones[id] = zone
		}
	}
	return zones
}

// preferredLease reports whether l rather than prev describes member id:
// the Lease named after the member, else the first by name.
func preferredLease(l, prev *coordinationv1.Lease, id string) bool {
	if (l.Name == id) != (prev.Name == id) {
		return l.Name == id
	}
	return l.Name < prev.Name
}
