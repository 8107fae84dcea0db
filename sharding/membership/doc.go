// Package membership keeps track of which replicas are members of a ring.
//
// Every replica holds a coordination.k8s.io/v1 Lease of its own, named
// after its shard id and labelled with the ring's name (LabelRing) and,
// when known, its zone (LabelZone; Zones reads them). Heartbeat creates
// and renews that Lease, fences the replica (it stops probing and writing
// status) when it cannot renew in time, signals every fencing change on a
// channel (it calls nobody back), and on shutdown deletes the Lease, unless
// another writer has taken it over, so that the others take over at once,
// marked first with the instant from which the replica started no probe
// (AnnotationProbingStopped), so that they take over from exactly there.
// Before that, a replica asked to stop may announce on its Lease the
// instant it leaves (Heartbeat.Leave, AnnotationLeavingAt) and go on
// probing until then: Leaving drops it from the others' rings at that
// instant, on their timers, whenever the Lease event reached them.
// Observations decide, from the Leases a replica sees and when it saw them
// change, which members are alive at a given instant; Observe, Live and
// Stale are pure and read no clock.
//
// Liveness is judged on the observer's clock, as client-go's leader
// election does: a member is live until leaseDurationSeconds after this
// replica observed its Lease change (a new renewTime, holder, duration or
// UID); a Lease seen for the first time counts as observed now. The
// renewTime a writer stamps is never compared with the reader's clock, so
// a replica whose clock is behind is not dropped while it still renews,
// and one whose clock is ahead is not kept alive for minutes after it
// crashed. A replica fences itself SafetyMargin before its Lease could
// expire in anyone's eyes: LeaseDuration - SafetyMargin after the start of
// its last successful renewal, on its own clock; no one observes that
// renewal before it started, so every observer's expiry comes later.
package membership
