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
// # Vantage points
//
// A checker that asks for k vantage points is probed by the k members
// VantagePoints returns, its owner first. They come from a walk that goes
// clockwise from all of the key's probes at once, nearest first: a member's
// rank is the smallest (distance, probe index) from a probe to one of its
// own tokens, ties broken by member name, and the owner ranks first. The set
// is then picked from that order in two passes: the first member of each
// zone in rank order (the owner is the first of its zone), then, with fewer
// zones than k, the members passed over, in rank order. Members without a
// zone ("") count as one zone together.
//
// Walking from the owner's token alone would be simpler but moves too much
// with multi-probe lookups: when the owner changes, that walk restarts at a
// token of the new owner somewhere else on the ring and re-forms the whole
// set. With the ten test pod names, k = 3 and members joining one at a time
// from 4 to 10, with and without zones, it replaced more than one member of
// about 8% of all sets per join on average; the rank order never does.
//
// Minimal movement. Give a member class 0 if it is the first of its zone in
// rank order and class 1 otherwise: the set is the k members smallest in
// (class, rank). A member's rank depends only on its own tokens, so when a
// member n joins, the others keep their order, and their classes too except
// one: the previous first member f of n's zone drops to class 1 if n
// outranks it. Take an old member x outside the old set: at least k old
// members precede it. If x is f, they were all of class 0 and still are, so
// they still precede it. Otherwise they all still precede x, except f if it
// dropped; but then n, of class 0 and outranking f, precedes x in f's place
// (f preceded x, so x is of class 1 or ranks after f). So x stays out: the
// new set is within the old set plus n, and as both hold min(k, N) members,
// a set changes only if n enters it, and then one old member leaves. A
// member m leaving is the same argument read backwards: the new set contains
// the old set minus m, and a set without m is unchanged. Without zones only the owner is of class 0, so the set is the
// first k in rank order and the old members keep their order too; with
// zones a member that drops to class 1 moves behind the first members of the
// other zones, which can change the order (never the membership) of the
// rest.
//
// The proof needs the owner to be chosen as the first of its zone, like
// any other class-0 member, which is why unzoned members share one zone
// (the owner is the first member of that zone when unzoned). Counting each
// of them as a zone of its own would also do, but would choose any number of
// unzoned members before a known zone not chosen yet. Never choosing an
// unzoned member for diversity (only to fill) would break it, since the
// owner is chosen whatever its zone: with k = 2, an unzoned owner A followed
// by B in zone a and C in zone b gives {A, B}; a member n of zone a that
// joins and outranks A gives {n, C}, replacing two members at once.
//
// Cost, with 100 members of 100 virtual nodes (BenchmarkVantagePoints, on a
// busy 2-CPU machine): 1 to 2 µs for k <= 5 without zones and for k <= 3
// with three zones. With fewer zones than k, every member's zone must be
// looked at to know that no other zone exists: about 4 µs for k = 5 and
// three zones, with a map as zoneOf. A call allocates only its result.
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
// then disagree, so such a change must be treated as a breaking one. The
// same holds for the walk and the zone rule of VantagePoints.
//
// # Concurrency
//
// A Ring is immutable: it has no clock, does no I/O and is never modified
// after New returns, so any number of goroutines may read it without
// locking. When membership changes, build a new Ring and publish it (for
// example through an atomic.Pointer).
package ring
