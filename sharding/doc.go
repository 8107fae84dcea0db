// Package sharding decides which WebCheckers this replica is responsible
// for: which ones it probes and whose status it writes.
//
// Ownership is the contract the scheduler and the reconciler consume. Static
// owns every checker and is what a single replica uses; the Assigner plugs
// the Lease-based consistent-hash ring in behind the same interface.
//
// Dependencies point one way: the Assigner reads the ring's Leases from a
// cache and this replica's fencing from a Fencer (membership.Heartbeat),
// and wakes on the Fencer's FencingChanges channel; neither calls back into
// the Assigner. Which checkers move when the ring or the fencing changes is
// decided by a pure function of the old and new assignment.
package sharding
