// Package membership keeps track of which replicas are members of a ring.
//
// Every replica holds a coordination.k8s.io/v1 Lease of its own, named
// after its shard id and labelled with the ring's name. Heartbeat creates
// and renews that Lease, fences the replica (it stops probing and writing
// status) when it cannot renew in time, signals every fencing change on a
// channel (it calls nobody back), and on shutdown deletes the Lease, unless
// another writer has taken it over, so that the others take over at once.
// Live decides, from the Leases every replica sees, which members are alive
// at a given instant; it is pure and reads no clock.
//
// A member is live while renewTime + leaseDurationSeconds is in the future.
// A replica fences itself SafetyMargin before that instant (measured from
// the start of its last successful renewal, on its own clock), so that it has
// stopped before any other replica can consider its Lease expired.
package membership
