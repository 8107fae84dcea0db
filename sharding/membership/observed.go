package membership

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// record is what a renewal changes in a Lease: a Lease whose record (or
// UID) differs from the one observed before has been written since.
type record struct {
	uid       types.UID
	holder    string
	duration  int32
	renewTime time.Time
	acquire   time.Time
}

func recordOf(l *coordinationv1.Lease) record {
	r := record{uid: l.UID, holder: ptr.Deref(l.Spec.HolderIdentity, ""), duration: ptr.Deref(l.Spec.LeaseDurationSeconds, 0)}
	if l.Spec.RenewTime != nil {
		r.renewTime = l.Spec.RenewTime.Time
	}
	if l.Spec.AcquireTime != nil {
		r.acquire = l.Spec.AcquireTime.Time
	}
	return r
}

func (r record) equal(o record) bool {
	return r.uid == o.uid && r.holder == o.holder && r.duration == o.duration &&
		r.renewTime.Equal(o.renewTime) && r.acquire.Equal(o.acquire)
}

// Observation is one Lease as this replica last saw it change.
type Observation struct {
	record record
	// At is when this replica first saw the Lease with its current record,
	// on this replica's clock.
	At time.Time
}

// Observations are the Leases of a ring as one replica has observed them,
// by Lease name. They judge liveness the way client-go's leader election
// does: a Lease is live until leaseDurationSeconds after this replica saw
// it change, on this replica's clock. The renewTime written in the Lease
// is only compared with its previous value, never with this replica's
// clock, so writers and readers need not agree on the time of day, only on
// how long a second lasts.
//
// It is safe because a replica fences itself on its own clock
// LeaseDuration - SafetyMargin after the start of its last successful
// renewal, and nobody can observe that renewal before it started: every
// observer's expiry comes at least SafetyMargin after the writer stopped.
//
// The zero value (nil) is an empty table. Observations are never mutated:
// Observe returns a new table.
type Observations map[string]Observation

// Observe returns the observation table after seeing leases at now: a
// Lease seen for the first time, or whose record (holder, duration,
// renewTime, acquireTime) or UID changed since prev, is observed at now;
// the others keep the instant of prev. Leases absent from leases are
// forgotten. prev is not modified.
func Observe(prev Observations, leases []coordinationv1.Lease, now time.Time) Observations {
	next := make(Observations, len(leases))
	for i := range leases {
		r := recordOf(&leases[i])
		o, ok := prev[leases[i].Name]
		if !ok || !o.record.equal(r) {
			o = Observation{record: r, At: now}
		}
		next[leases[i].Name] = o
	}
	return next
}

// observedAt is when the Lease was observed with its current record: now
// for a Lease missing from o or changed since (as if Observe had just seen
// it).
func (o Observations) observedAt(l *coordinationv1.Lease, now time.Time) time.Time {
	if obs, ok := o[l.Name]; ok && obs.record.equal(recordOf(l)) {
		return obs.At
	}
	return now
}

// Live returns the sorted ids of the members whose Leases are live at now,
// judged by when they were observed (see Observations), and the earliest
// instant at which one of them expires (zero when none is live): the
// caller must look again then, because expiry is not an event. A Lease
// being deleted is not live.
func (o Observations) Live(leases []coordinationv1.Lease, now time.Time) (ids []string, nextExpiry time.Time) {
	return liveBy(leases, now, func(l *coordinationv1.Lease, m Member) time.Time { return o.observedAt(l, now).Add(m.Duration) })
}

// Stale returns the Leases that describe no live member and have not
// changed for longer than after, on this replica's clock: a member's Lease
// once it has been expired for longer than after, any other Lease (a
// released one, with no holder) once it has been unchanged for longer than
// after. A crashed replica's Lease stays behind when nobody releases it.
func (o Observations) Stale(leases []coordinationv1.Lease, now time.Time, after time.Duration) []coordinationv1.Lease {
	var stale []coordinationv1.Lease
	for i := range leases {
		l := &leases[i]
		if l.DeletionTimestamp != nil {
			continue
		}
		last := o.observedAt(l, now)
		if m, ok := MemberOf(l); ok {
			last = last.Add(m.Duration)
			if now.Before(last) {
				continue // live
			}
		}
		if now.Sub(last) > after {
			stale = append(stale, *l)
		}
	}
	return stale
}
