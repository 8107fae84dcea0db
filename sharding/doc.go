// Package sharding decides which WebCheckers this replica is responsible
// for: which ones it probes and whose status it writes.
//
// The Assigner answers Owns(key) and ShardID() for this replica from a
// consistent-hash ring built from the ring's Leases. Its consumers declare
// what they need of it themselves: the probe scheduler takes Owns as a
// function, the reconciler an Ownership interface, the metrics a
// ShardSource; cmd/manager wires them.
//
// Dependencies point one way: the Assigner reads the ring's Leases from a
// cache and this replica's fencing from a Fencer (membership.Heartbeat),
// and wakes on the Fencer's FencingChanges channel; neither calls back into
// the Assigner. Which checkers move when the ring or the fencing changes is
// decided by a pure function of the old and new assignment.
package sharding
