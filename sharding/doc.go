// Package sharding decides which WebCheckers this replica is responsible
// for: which ones it probes and whose status it writes.
//
// Ownership is the contract the scheduler and the reconciler consume. Static
// owns every checker and is what a single replica uses; the Lease-based
// consistent-hash ring plugs in behind the same interface.
package sharding
