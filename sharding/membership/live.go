package membership

import (
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// LabelRing labels a Lease with the name of the ring it belongs to.
const LabelRing = "test.network.io/ring"

// Member is a ring member as described by its Lease.
type Member struct {
	// ID is the member's shard id (the Lease's holderIdentity).
	ID string
	// RenewTime is when the member last renewed its Lease.
	RenewTime time.Time
	// Duration is how long the Lease is valid after RenewTime.
	Duration time.Duration
}

// Expiry is the instant the member stops being live.
func (m Member) Expiry() time.Time { return m.RenewTime.Add(m.Duration) }

// LiveAt reports whether the member is live at now: strictly before its
// expiry.
func (m Member) LiveAt(now time.Time) bool { return now.Before(m.Expiry()) }

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

// Stale returns the Leases that describe no live member and have not been
// renewed for longer than after (a crashed replica's Lease stays behind
// when nobody releases it). A Lease with no renew time is stale once it is
// older than after.
func Stale(leases []coordinationv1.Lease, now time.Time, after time.Duration) []coordinationv1.Lease {
	var stale []coordinationv1.Lease
	for _, l := range leases {
		if l.DeletionTimestamp != nil {
			continue
		}
		last := l.CreationTimestamp.Time
		if m, ok := MemberOf(&l); ok {
			if m.LiveAt(now) {
				continue
			}
			last = m.Expiry()
		} else if l.Spec.RenewTime != nil {
			last = l.Spec.RenewTime.Time
		}
		if now.Sub(last) > after {
			stale = append(stale, l)
		}
	}
	return stale
}

// Live returns the sorted ids of the members whose Leases are live at now,
// and the earliest instant at which one of them expires (zero when none is
// live): the caller must look again then, because expiry is not an event.
// A Lease being deleted is not live.
func Live(leases []coordinationv1.Lease, now time.Time) (ids []string, nextExpiry time.Time) {
	for i := range leases {
		if leases[i].DeletionTimestamp != nil {
			continue
		}
		m, ok := MemberOf(&leases[i])
		if !ok || !m.LiveAt(now) {
			continue
		}
		if !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID)
		}
		if nextExpiry.IsZero() || m.Expiry().Before(nextExpiry) {
			nextExpiry = m.Expiry()
		}
	}
	slices.Sort(ids)
	return ids, nextExpiry
}
