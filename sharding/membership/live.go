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
	return annotatedTime(l, AnnotationProbingStopped)
}

// AnnotationLeavingAt is set by a replica asked to stop (SIGTERM) on the
// Lease it still holds and renews (see Heartbeat.Leave): the instant (RFC
// 3339, nanoseconds, on its own clock) until which it goes on probing its
// checkers, and from which the others probe them. They drop it from their
// ring at that instant on their own timer (see Leaving), without waiting
// for its Lease to be deleted, so that a Lease event that reaches a loaded
// replica seconds late costs no turn as long as it arrives before the
// instant; one that arrives after it takes over from it at once. Like
// AnnotationProbingStopped the instant names a point of the checkers'
// grids, which every replica computes from the time of day alike; it does
// not make a member live: one that never reaches it is dropped when its
// Lease expires or is deleted, as any other.
const AnnotationLeavingAt = "test.network.io/leaving-at"

// LeavingAt reads AnnotationLeavingAt from a Lease; ok is false when it
// has none, or one that is not an RFC 3339 time.
func LeavingAt(l *coordinationv1.Lease) (at time.Time, ok bool) {
	return annotatedTime(l, AnnotationLeavingAt)
}

// annotatedTime reads the RFC 3339 instant of annotation key of l.
func annotatedTime(l *coordinationv1.Lease, key string) (time.Time, bool) {
	v, set := l.Annotations[key]
	if !set {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	return at, err == nil
}

// Leaving takes out of ids (sorted live members, as Live returns them) the
// members that announced they leave the ring at or before now
// (AnnotationLeavingAt on a Lease they hold), and returns those that stay,
// with the instant each member taken out announced. next is the earliest
// instant announced after now by a member that stays (zero when none): the
// caller must look again then, as at an expiry. self is never taken out: a
// replica goes on probing until it has stopped, whatever it announced. A
// Lease being deleted is ignored, as Live ignores it.
func Leaving(leases []coordinationv1.Lease, ids []string, self string, now time.Time) (staying []string, left map[string]time.Time, next time.Time) {
	staying = ids
	for i := range leases {
		l := &leases[i]
		if l.DeletionTimestamp != nil {
			continue
		}
		m, ok := MemberOf(l)
		if !ok || m.ID == self {
			continue
		}
		at, ok := LeavingAt(l)
		if !ok {
			continue
		}
		if _, found := slices.BinarySearch(staying, m.ID); !found {
			continue
		}
		if now.Before(at) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		if left == nil {
			left = map[string]time.Time{}
			staying = slices.Clone(ids)
		}
		left[m.ID] = at
		staying = slices.DeleteFunc(staying, func(id string) bool { return id == m.ID })
	}
	return staying, left, next
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
