package ring

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// DefaultVirtualNodes is the number of tokens each member gets when New is
// called with virtualNodes <= 0.
const DefaultVirtualNodes = 100

// Ring is an immutable consistent-hash ring. Build one with New whenever the
// set of members changes; a Ring is never modified after construction, so it
// is safe for concurrent use without locks. The zero value and a nil *Ring are
// empty rings.
type Ring struct {
	// tokens holds every member's tokens in ascending order (ties broken by
	// member name); owners[i] is the index into members of the member that
	// owns tokens[i].
	tokens []uint64
	owners []int32
	// members is sorted and free of duplicates and empty names.
	members []string
	vnodes  int
}

// New builds a ring in which every distinct, non-empty member owns
// virtualNodes tokens (DefaultVirtualNodes when virtualNodes <= 0).
//
// Token i of member m is TokenHash(m, i), i.e. the 64-bit xxhash (XXH64,
// seed 0) of the string m + "#" + strconv.Itoa(i). The result depends only on
// the set of members and virtualNodes: the order of members, duplicates and
// empty strings in it do not matter, so every process that sees the same
// membership builds an identical ring. An empty (or nil) members list gives
// an empty ring whose Owner is always "".
//
// New does not retain members.
func New(members []string, virtualNodes int) *Ring {
	return newRing(members, virtualNodes, TokenHash)
}

// newRing is New with the token function as a parameter, so that tests can
// force equal tokens and check how ties are broken.
func newRing(members []string, virtualNodes int, tokenHash func(member string, i int) uint64) *Ring {
	if virtualNodes <= 0 {
		virtualNodes = DefaultVirtualNodes
	}
	ms := make([]string, 0, len(members))
	for _, m := range members {
		if m != "" {
			ms = append(ms, m)
		}
	}
	slices.Sort(ms)
	ms = slices.Compact(ms)
	ms = slices.Clip(ms)

	type token struct {
		hash  uint64
		owner int32
	}
	all := make([]token, 0, len(ms)*virtualNodes)
	for mi, m := range ms {
		for i := range virtualNodes {
			all = append(all, token{hash: tokenHash(m, i), owner: int32(mi)})
		}
	}
	// members is sorted, so comparing owner indexes breaks ties by member
	// name. Equal (hash, owner) pairs cannot occur: a member's token strings
	// are distinct, and even if two of them collided the order between them
	// would be irrelevant.
	slices.SortFunc(all, func(a, b token) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.owner, b.owner))
	})

	r := &Ring{
		tokens:  make([]uint64, len(all)),
		owners:  make([]int32, len(all)),
		members: ms,
		vnodes:  virtualNodes,
	}
	for i, t := range all {
		r.tokens[i] = t.hash
		r.owners[i] = t.owner
	}
	return r
}

// TokenHash returns the position on the ring of token i of member: the
// 64-bit xxhash (XXH64, seed 0) of member + "#" + strconv.Itoa(i). It is
// exported so that other implementations (and tests) can reproduce the ring
// exactly; changing it changes the owner of most keys and must be rolled out
// to all replicas at once.
func TokenHash(member string, i int) uint64 {
	return indexedHash(member, i)
}

// KeyHash returns the position on the ring of key: its 64-bit xxhash (XXH64,
// seed 0).
func KeyHash(key string) uint64 {
	return xxhash.Sum64String(key)
}

// Key returns the ring key of the WebChecker namespace/name: the two joined
// by "/", the same string as types.NamespacedName.String().
func Key(namespace, name string) string {
	return namespace + "/" + name
}

// Probes is the number of positions a key is hashed to (multi-probe
// consistent hashing). With the default 100 virtual nodes it brings the
// busiest of ten members from about 1.15-1.35x the mean load down to about
// 1.05-1.12x, at the cost of Probes binary searches per lookup.
const Probes = 8

// Owner returns the member that owns key. The key is hashed to Probes
// positions (ProbeHash); for each, the first token at or after it (wrapping
// around past the largest token) is found, and the token closest to its
// probe wins. It returns "" for an empty ring.
//
// Like a single-probe ring, this moves keys only onto a member that joins and
// only away from a member that leaves: a new token can only shorten some
// probe's distance, making the new member the winner, and removing tokens
// can only lengthen the distances of probes that led to the removed member.
func (r *Ring) Owner(key string) string {
	if r == nil || len(r.tokens) == 0 {
		return ""
	}
	best, bestDistance := 0, uint64(0)
	for j := range Probes {
		h := ProbeHash(key, j)
		i, _ := slices.BinarySearch(r.tokens, h)
		if i == len(r.tokens) {
			i = 0
		}
		// Unsigned subtraction measures the clockwise distance, wrapping
		// around correctly for i == 0.
		d := r.tokens[i] - h
		if j == 0 || d < bestDistance {
			best, bestDistance = i, d
		}
	}
	return r.members[r.owners[best]]
}

// ProbeHash returns the position on the ring of probe j of key: KeyHash(key)
// for j == 0, else the xxhash of key + "#" + strconv.Itoa(j).
func ProbeHash(key string, j int) uint64 {
	if j == 0 {
		return KeyHash(key)
	}
	return indexedHash(key, j)
}

// indexedHash is the one hash behind TokenHash and ProbeHash: the 64-bit
// xxhash (XXH64, seed 0) of s + "#" + strconv.Itoa(i), computed without
// allocating for strings of usual length (member names, checker keys).
func indexedHash(s string, i int) uint64 {
	var buf [128]byte
	b := append(buf[:0], s...)
	b = append(b, '#')
	b = strconv.AppendInt(b, int64(i), 10)
	return xxhash.Sum64(b)
}

// Members returns the ring's distinct members in ascending order. The slice
// is a copy; the caller may modify it.
func (r *Ring) Members() []string {
	if r == nil || len(r.members) == 0 {
		return []string{}
	}
	return slices.Clone(r.members)
}

// Len returns the number of distinct members.
func (r *Ring) Len() int {
	if r == nil {
		return 0
	}
	return len(r.members)
}

// VirtualNodes returns the number of tokens per member the ring was built
// with (after applying the default). It is 0 for the zero Ring and nil.
func (r *Ring) VirtualNodes() int {
	if r == nil {
		return 0
	}
	return r.vnodes
}

// Contains reports whether member is one of the ring's members.
func (r *Ring) Contains(member string) bool {
	if r == nil {
		return false
	}
	_, found := slices.BinarySearch(r.members, member)
	return found
}

// Equal reports whether r and o assign every key to the same owner because
// they have the same members and the same number of virtual nodes. Two empty
// rings are equal whatever their virtual nodes; nil equals an empty ring.
func (r *Ring) Equal(o *Ring) bool {
	if r.Len() == 0 || o.Len() == 0 {
		return r.Len() == o.Len()
	}
	return r.vnodes == o.vnodes && slices.Equal(r.members, o.members)
}
