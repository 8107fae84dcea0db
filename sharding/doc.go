// Package sharding decides which WebCheckers this replica is responsible
// for: which ones it probes and whose status it writes.
//
// The Assigner answers Owns(key) and ShardID() for this replica from a
// consistent-hash ring built from the ring's Leases. Its consumers declare
// what they need of it themselves: the probe scheduler takes Owns (or
// Probes) as a function, the reconciler an Ownership interface, the
// metrics a ShardSource; cmd/manager wires them.
//
// A checker may ask for several vantage points (quorum probing): then
// VantagePoints(key, k) replicas probe it, the owner first, then the next
// members of the ring's walk in zones not chosen yet (ring.VantagePoints).
// Each replica's zone is the membership.LabelZone label its Heartbeat
// writes on its Lease, so every replica computes the same sets from the
// same Leases. Probes(key, k) tells whether this replica is one of them
// and not fenced; for k = 1 it is Owns.
//
// Dependencies point one way: the Assigner reads the ring's Leases from a
// cache and this replica's fencing from a Fencer (membership.Heartbeat),
// and wakes on the Fencer's FencingChanges channel; neither calls back into
// the Assigner. Which checkers move (or are regrouped) when the ring, the
// members' zones or the fencing change is decided by a pure function of
// the old and new assignment.
//
// A fencing stops Owns and Probes at once, but becomes a change of the
// ring (every checker this replica owns lost, and gained back when it
// ends) only once it has lasted AssignerOptions.FenceSettle, the
// Heartbeat's safety margin: sooner, no other replica can have seen its
// Lease expire, and the replica is only paused (Paused), its skipped turns
// made up through AssignerOptions.Resume when the fencing ends.
package sharding
