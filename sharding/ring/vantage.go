package ring

import "slices"

// VantagePoints returns the members that probe key when it asks for k
// vantage points: min(k, r.Len()) distinct members, the first of which is
// always r.Owner(key). It returns an empty slice for an empty ring or k <= 0.
//
// # The walk
//
// The members are taken in the order in which a clockwise walk reaches them
// from all Probes positions of the key at once, nearest first: every pair
// (probe j, token t) is ordered by the clockwise distance from
// ProbeHash(key, j) to t, then by j, then by t's place in the ring (equal
// tokens by member name), and a member is reached at its first pair. So each
// member's rank is its smallest (distance, probe) over its own tokens, ties
// broken by name. The first pair is the one Owner picks, so the walk starts
// at the owner. With Probes = 1 this would be the plain clockwise walk from
// the key's position.
//
// # Zones
//
// zoneOf gives a member's zone. The walk is taken in two passes:
//
//  1. the owner, then every member whose zone is not yet chosen, in walk
//     order, until k are chosen;
//  2. if the walk went round the whole ring with fewer than k chosen, the
//     members the first pass skipped, in walk order.
//
// Members whose zone is unknown ("") share one zone: they might all be in
// the same place, so at most one of them is chosen for diversity and the
// others only fill. A nil zoneOf puts every member in that zone, so the set
// is simply the first k members of the walk. The result holds min(k, Z)
// distinct zone values, Z being the number of distinct zones of the members
// ("" counting once), its first min(k, Z) members in pairwise distinct
// zones: the first pass's members, then the second pass's, each in walk
// order.
//
// zoneOf must give a member the same zone on every call and every replica.
// It is called from the calling goroutine, at most twice per member and call:
// for the members the walk reaches, and, when the set can be filled before
// every zone has been chosen, for the members not reached yet until one of
// them is in a zone not chosen yet (when k exceeds the number of zones, that
// means every member).
//
// # Guarantees
//
// The result depends only on the ring's members and virtual nodes, the key,
// k and the zones, so every replica computes the same sets. When a member n
// joins, the others keeping their zones, every key's new set is within its
// old set plus n: a set changes only if n enters it, and then exactly one old
// member leaves it (none if the ring had fewer than k members). When a member
// m leaves, the sets without m are identical, in the same order; the others
// lose m and gain exactly one member (none if fewer than k remain). This
// holds for the keys whose owner changes too. Without zones (a nil zoneOf,
// or every member in one zone) the order is kept as well: the new set is the
// old one with n inserted (and its last member dropped if it had k). With
// zones the order of the remaining members can change, because a member that
// stops being the first of its zone moves from the first pass to the second.
// A member whose zone changes moves sets as if it left and joined again, so
// any set changes by at most two members. The package documentation has the
// proof.
func (r *Ring) VantagePoints(key string, k int, zoneOf func(member string) string) []string {
	k = min(k, r.Len())
	if k <= 0 {
		return []string{}
	}
	// Small calls allocate nothing but the result: the chosen zones, the
	// skipped members (the first k-1 are enough, as the owner is always
	// chosen) and the bitset of members reached live on the stack.
	var (
		zoneBuf [8]string
		skipBuf [8]int32
		seenBuf [4]uint64
	)
	out := make([]string, 0, k)
	zones, skipped, seen := zoneBuf[:0], skipBuf[:0], seenBuf[:]
	if words := (r.Len() + 63) / 64; words > len(seen) {
		seen = make([]uint64, words)
	}
	var w walker
	w.init(r, key)
	u := unreached{witness: -1}
	// Stopping once every member has been reached also keeps every cursor
	// within one turn of the ring.
	for reached := 0; len(out) < k && reached < r.Len(); {
		m := w.next()
		if seen[m/64]&(1<<(m%64)) != 0 {
			continue
		}
		seen[m/64] |= 1 << (m % 64)
		reached++
		z := ""
		if zoneOf != nil {
			z = zoneOf(r.members[m])
		}
		if !slices.Contains(zones, z) {
			out, zones = append(out, r.members[m]), append(zones, z)
		} else if len(skipped) < k-1 {
			skipped = append(skipped, m)
		}
		// With enough members at hand to fill the set, walking on only
		// helps if a member not reached yet is in a zone not chosen yet.
		if len(out) < k && len(out)+len(skipped) >= k && !u.inNewZone(r, seen, zones, zoneOf) {
			break
		}
	}
	for _, m := range skipped[:min(len(skipped), k-len(out))] {
		out = append(out, r.members[m])
	}
	return out
}

// walker enumerates the ring's tokens in the order VantagePoints walks them:
// one cursor per probe, and at each step the cursor whose next token is
// nearest to its probe (the lowest probe index on ties) moves on.
//
// A cursor must not be advanced past a full turn of the ring: its distance
// would wrap around to a small value. Callers stop once every member has been
// reached, which happens by the time any single cursor has visited every
// token.
type walker struct {
	tokens []uint64
	owners []int32
	probe  [Probes]uint64 // the probes' positions
	at     [Probes]int    // each cursor's next token index
	dist   [Probes]uint64 // clockwise distance from the probe to that token
}

// init places one cursor at the first token at or after each of key's
// probes, as Owner does. r must not be empty.
func (w *walker) init(r *Ring, key string) {
	w.tokens, w.owners = r.tokens, r.owners
	for j := range Probes {
		h := ProbeHash(key, j)
		i, _ := slices.BinarySearch(r.tokens, h)
		if i == len(r.tokens) {
			i = 0
		}
		w.probe[j], w.at[j], w.dist[j] = h, i, r.tokens[i]-h
	}
}

// next returns the index (into Ring.members) of the owner of the next token
// of the walk and advances that token's cursor.
func (w *walker) next() int32 {
	best := 0
	for j := 1; j < Probes; j++ {
		if w.dist[j] < w.dist[best] {
			best = j
		}
	}
	i := w.at[best]
	owner := w.owners[i]
	if i++; i == len(w.tokens) {
		i = 0
	}
	w.at[best], w.dist[best] = i, w.tokens[i]-w.probe[best]
	return owner
}

// unreached answers, during one VantagePoints call, whether a member the walk
// has not reached yet is in a zone not chosen yet. It keeps such a member as
// a witness and looks for another only when the witness is reached or its
// zone chosen. A member that is no witness never becomes one again (members
// are only ever reached and zones only ever chosen), so the search resumes
// where it stopped and asks zoneOf about each member at most once per call.
type unreached struct {
	next        int    // the next member index to examine
	witness     int32  // a member of an unchosen zone, or -1
	witnessZone string // its zone
}

// inNewZone reports whether a member not marked in seen has a zone not in
// zones. A nil zoneOf puts every member in one zone, so it never does.
func (u *unreached) inNewZone(r *Ring, seen []uint64, zones []string, zoneOf func(string) string) bool {
	if zoneOf == nil {
		return false
	}
	isSeen := func(m int32) bool { return seen[m/64]&(1<<(m%64)) != 0 }
	if u.witness >= 0 && !isSeen(u.witness) && !slices.Contains(zones, u.witnessZone) {
		return true
	}
	u.witness = -1
	for ; u.next < len(r.members); u.next++ {
		m := int32(u.next)
		if isSeen(m) {
			continue
		}
		if z := zoneOf(r.members[m]); !slices.Contains(zones, z) {
			u.witness, u.witnessZone = m, z
			u.next++
			return true
		}
	}
	return false
}
