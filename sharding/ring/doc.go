// Package ring is the consistent-hash ring that decides which replica of the
// operator owns which WebChecker.
//
// # Consistent hashing
//
// Every member (a replica's shard id, e.g. its pod name) is placed on a
// circle of 2^64 positions at a number of pseudo-random points called
// tokens. A key is hashed onto the same circle and is owned by the member
// whose token is the first one at or after the key's position, wrapping
// around past the largest token to the smallest. When a member joins, it
// takes over only the keys that fall just before its new tokens; when a
// member leaves, only its keys move, each to the member of the next token.
// All other keys keep their owner, so membership changes disturb about 1/N of
// the checkers instead of reshuffling all of them as hash(key) mod N would.
//
// # Virtual nodes
//
// With one token per member the arcs between tokens, and so the members'
// loads, would be very uneven. Each member therefore gets several tokens
// ("virtual nodes", 100 by default). That alone still leaves a spread of
// about 1/sqrt(virtual nodes): with ten members and 100 virtual nodes the
// busiest one would typically hold 1.15x the mean and sometimes 1.3x.
//
// # Multi-probe lookups
//
// A key is therefore hashed to Probes positions instead of one, and the token
// nearest to any of them (clockwise) decides the owner (multi-probe
// consistent hashing, Appleton and O'Reilly, 2015). This averages over more
// arcs and brings the busiest of ten members to about 1.05x the mean (at
// most 1.11x over 100 random sets of pod names), while keeping the property
// that matters for hand-overs: a joining member takes keys only from others,
// a leaving member's keys are the only ones that move. A lookup costs Probes
// binary searches, well under a microsecond.
//
// Token i of member m is the 64-bit xxhash (XXH64, seed 0) of the string
// m + "#" + strconv.Itoa(i) (see TokenHash); a key's probes are the xxhash of
// the key itself and of key + "#" + j for j = 1..Probes-1 (see ProbeHash).
// The key of a WebChecker is Key(namespace, name), i.e. "namespace/name".
//
// # Why the hash must be stable across processes
//
// Replicas never talk to each other about ownership. Each one builds its own
// Ring from the same membership list and must reach exactly the same answer
// for every key, or two replicas would both probe a checker (and fight over
// its status) or none would. The ring is therefore a pure function of the
// set of members and the number of virtual nodes: it does not depend on the
// order or duplicates of the members list, tokens with equal hashes are
// ordered by member name, and the hash is a fixed, unseeded algorithm that
// gives the same result in every process, on every architecture and in every
// release. hash/maphash, Go map iteration order or anything else seeded per
// process must never be used here. Changing TokenHash, ProbeHash or Probes changes the
// owner of most keys; during a rolling upgrade old and new replicas would
// then disagree, so such a change must be treated as a breaking one.
//
// # Concurrency
//
// A Ring is immutable: it has no clock, does no I/O and is never modified
// after New returns, so any number of goroutines may read it without
// locking. When membership changes, build a new Ring and publish it (for
// example through an atomic.Pointer).
package ring
