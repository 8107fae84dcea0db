package ring

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vantageKs are the numbers of vantage points the property tests ask for:
// every value the API allows (1..5) and more than some rings have members.
var vantageKs = []int{1, 2, 3, 4, 5, 7}

// vantageCase is a membership with zones for the property tests.
type vantageCase struct {
	members []string
	// zones maps a member to its zone; members absent from it are
	// unzoned (""). nilZoneOf makes the test pass a nil zoneOf.
	zones     map[string]string
	nilZoneOf bool
}

// zoneOf returns the zoneOf function VantagePoints gets for the case.
func (c vantageCase) zoneOf() func(string) string {
	if c.nilZoneOf {
		return nil
	}
	return func(m string) string { return c.zones[m] }
}

// zoneCount is the number of distinct zone values over the members, ""
// counting once.
func (c vantageCase) zoneCount() int {
	zs := map[string]bool{}
	for _, m := range c.members {
		zs[c.zones[m]] = true
	}
	return len(zs)
}

// seededPodNames returns n distinct pod names like podNames, drawn from the
// given seed. The seeds used below were fixed before any result was looked
// at and must not be changed to make a test pass.
func seededPodNames(seed uint64, n int) []string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var names []string
	for len(names) < n {
		var b strings.Builder
		b.WriteString("webchecker-5f6c7b9d8-")
		for range 5 {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		if !slices.Contains(names, b.String()) {
			names = append(names, b.String())
		}
	}
	return names
}

// assignZones gives member i the zone pattern[i % len(pattern)] ("" leaves
// it unzoned).
func assignZones(members []string, pattern ...string) map[string]string {
	zones := map[string]string{}
	for i, m := range members {
		if z := pattern[i%len(pattern)]; z != "" {
			zones[m] = z
		}
	}
	return zones
}

// vantageCases are the memberships of the property tests: random pod names
// in zones a, b and c, unzoned, and mixed.
func vantageCases() map[string]vantageCase {
	c := map[string]vantageCase{}
	m := seededPodNames(1, 9)
	c["9 pods in zones a/b/c"] = vantageCase{members: m, zones: assignZones(m, "a", "b", "c")}
	m = seededPodNames(2, 10)
	c["10 pods nil zoneOf"] = vantageCase{members: m, nilZoneOf: true}
	m = seededPodNames(3, 8)
	c["8 pods a/b/c and unzoned"] = vantageCase{members: m, zones: assignZones(m, "a", "", "b", "c", "")}
	m = seededPodNames(4, 7)
	c["7 pods a/b uneven"] = vantageCase{members: m, zones: assignZones(m, "a", "a", "a", "b", "a", "a", "a")}
	m = seededPodNames(5, 5)
	c["5 pods all unzoned"] = vantageCase{members: m, zones: map[string]string{}}
	m = seededPodNames(6, 3)
	c["3 pods one zone each"] = vantageCase{members: m, zones: assignZones(m, "a", "b", "c")}
	m = seededPodNames(7, 16)
	c["16 pods a/b/c random and unzoned"] = vantageCase{members: m, zones: randomZones(m, 7)}
	return c
}

// randomZones puts each member in a, b or c or leaves it unzoned, at random
// from the seed.
func randomZones(members []string, seed uint64) map[string]string {
	rng := rand.New(rand.NewPCG(seed, 0x20e5))
	zones := map[string]string{}
	for _, m := range members {
		if z := []string{"a", "b", "c", ""}[rng.IntN(4)]; z != "" {
			zones[m] = z
		}
	}
	return zones
}

// referenceRing restates VantagePoints' documented definition with nothing
// but TokenHash and ProbeHash: each member's sorted tokens.
type referenceRing map[string][]uint64

func newReferenceRing(members []string, vnodes int) referenceRing {
	rr := referenceRing{}
	for _, m := range members {
		toks := make([]uint64, vnodes)
		for i := range toks {
			toks[i] = TokenHash(m, i)
		}
		slices.Sort(toks)
		rr[m] = toks
	}
	return rr
}

// vantagePoints ranks each member by its first (distance, probe) pair over
// its own tokens, ties by name, and runs the two passes over that order.
func (rr referenceRing) vantagePoints(key string, k int, zoneOf func(string) string) []string {
	type rank struct {
		d    uint64
		j    int
		name string
	}
	var ranks []rank
	for m, toks := range rr {
		best := rank{name: m, j: -1}
		for j := range Probes {
			h := ProbeHash(key, j)
			i, _ := slices.BinarySearch(toks, h)
			if d := toks[i%len(toks)] - h; best.j < 0 || d < best.d {
				best.d, best.j = d, j
			}
		}
		ranks = append(ranks, best)
	}
	slices.SortFunc(ranks, func(a, b rank) int {
		return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.j, b.j), strings.Compare(a.name, b.name))
	})
	var first, skipped, chosen []string
	for _, r := range ranks {
		z := ""
		if zoneOf != nil {
			z = zoneOf(r.name)
		}
		if len(first) < k && !slices.Contains(chosen, z) {
			first, chosen = append(first, r.name), append(chosen, z)
		} else {
			skipped = append(skipped, r.name)
		}
	}
	return append(first, skipped[:min(k, len(rr))-len(first)]...)
}

// distinct reports whether set has no duplicates.
func distinct(set []string) bool {
	sorted := slices.Sorted(slices.Values(set))
	return len(slices.Compact(sorted)) == len(set)
}

// TestVantagePointsDistinctOwnerFirst checks property 1 (min(k, N) distinct
// members of the ring, the first being Owner) and that the result is the
// documented walk, against referenceVantagePoints.
func TestVantagePointsDistinctOwnerFirst(t *testing.T) {
	keys := testKeys(numKeys)
	for name, tc := range vantageCases() {
		t.Run(name, func(t *testing.T) {
			vnodes := 50
			r, ref := New(tc.members, vnodes), newReferenceRing(tc.members, vnodes)
			zoneOf := tc.zoneOf()
			for _, key := range keys {
				owner := r.Owner(key)
				for _, k := range vantageKs {
					got := r.VantagePoints(key, k, zoneOf)
					if len(got) != min(k, len(tc.members)) || got[0] != owner || !distinct(got) {
						t.Fatalf("key %q k=%d: got %q, want %d distinct members, the first %s", key, k, got, min(k, len(tc.members)), owner)
					}
					for _, m := range got {
						require.True(t, r.Contains(m))
					}
					if k == 3 || k == 7 {
						if want := ref.vantagePoints(key, k, zoneOf); !slices.Equal(want, got) {
							t.Fatalf("key %q k=%d: got %q, the definition gives %q", key, k, got, want)
						}
					}
				}
			}
		})
	}
}

// TestVantagePointsZoneDiverse checks property 2: a set holds min(k, Z)
// distinct zone values ("" counting as one), and its first min(k, Z) members
// are in pairwise distinct zones.
func TestVantagePointsZoneDiverse(t *testing.T) {
	keys := testKeys(numKeys)
	for name, tc := range vantageCases() {
		t.Run(name, func(t *testing.T) {
			r := New(tc.members, 0)
			zoneOf := tc.zoneOf()
			z := tc.zoneCount()
			for _, key := range keys {
				for _, k := range vantageKs {
					got := r.VantagePoints(key, k, zoneOf)
					zones := make([]string, len(got))
					for i, m := range got {
						zones[i] = tc.zones[m]
					}
					want := min(k, z)
					if !distinct(zones[:want]) {
						t.Fatalf("key %q k=%d: the first %d of %q are not in distinct zones: %q", key, k, want, got, zones)
					}
					if slices.Sort(zones); len(slices.Compact(zones)) != want {
						t.Fatalf("key %q k=%d: %q has zones %q, want %d distinct", key, k, got, zones, want)
					}
				}
			}
		})
	}
}

// TestVantagePointsStable checks property 3: recomputing gives the same
// sets, and so does a ring built from the members in another order, with
// duplicates and an empty name.
func TestVantagePointsStable(t *testing.T) {
	keys := testKeys(numKeys)
	for name, tc := range vantageCases() {
		t.Run(name, func(t *testing.T) {
			a := New(tc.members, 0)
			shuffled := append(slices.Clone(tc.members), tc.members[0], "")
			rng := rand.New(rand.NewPCG(11, uint64(len(name))))
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			b := New(shuffled, 0)
			for _, key := range keys {
				want := a.VantagePoints(key, 3, tc.zoneOf())
				if again, other := a.VantagePoints(key, 3, tc.zoneOf()), b.VantagePoints(key, 3, tc.zoneOf()); !slices.Equal(want, again) || !slices.Equal(want, other) {
					t.Fatalf("key %q: %q, recomputed %q, other ring %q", key, want, again, other)
				}
			}
		})
	}
}

// vantageDigest summarises the vantage sets (k = 3, zones a/b/c) of the test
// keys in a ring of the ten test pod names.
func vantageDigest() string {
	names := podNames(10)
	zones := assignZones(names, "a", "b", "c")
	r := New(names, 0)
	h := xxhash.New()
	for _, key := range testKeys(numKeys) {
		fmt.Fprintln(h, strings.Join(r.VantagePoints(key, 3, func(m string) string { return zones[m] }), ","))
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// TestVantagePointsAcrossProcesses checks that another process (as another
// replica would) computes the same sets: nothing may be seeded per process.
func TestVantagePointsAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping child process in -short mode")
	}
	assert.Contains(t, helperOutput(t), "vantage-digest="+vantageDigest()+"\n")
}

func TestVantagePointsEdgeCases(t *testing.T) {
	empty := map[string]*Ring{"nil Ring": nil, "zero Ring": {}, "no members": New(nil, 0)}
	for name, r := range empty {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, []string{}, r.VantagePoints("ns/name", 3, nil))
		})
	}

	r := New(podNames(4), 0)
	zones := assignZones(podNames(4), "a", "b")
	byZone := func(m string) string { return zones[m] }
	for _, k := range []int{0, -1} {
		assert.Equal(t, []string{}, r.VantagePoints("ns/name", k, byZone), "k=%d", k)
	}
	allZones := r.VantagePoints("ns/name", 100, byZone)
	assert.ElementsMatch(t, r.Members(), allZones, "k > Len gives every member")

	single := New([]string{"webchecker-0"}, 0)
	assert.Equal(t, []string{"webchecker-0"}, single.VantagePoints("ns/name", 5, byZone))

	// Without zones, one zone for all and "" for all are the same: the
	// first k members of the walk.
	for _, key := range testKeys(1000) {
		want := r.VantagePoints(key, 4, nil)
		assert.Equal(t, want, r.VantagePoints(key, 4, func(string) string { return "" }))
		assert.Equal(t, want, r.VantagePoints(key, 4, func(string) string { return "zone-a" }))
		assert.Equal(t, want[:2], r.VantagePoints(key, 2, nil), "without zones a smaller k is a prefix")
	}
}

// TestVantagePointsPinned pins a few sets, like TestHashesArePinned pins the
// owners: if it fails, replicas of different versions would disagree about
// who probes a checker.
func TestVantagePointsPinned(t *testing.T) {
	members := []string{"replica-0", "replica-1", "replica-2", "replica-3", "replica-4"}
	zones := map[string]string{"replica-0": "a", "replica-1": "a", "replica-2": "b", "replica-3": "b", "replica-4": "c"}
	r := New(members, 0)
	for key, want := range goldenVantage {
		assert.Equal(t, want, r.VantagePoints(key, 3, func(m string) string { return zones[m] }), "key %q", key)
	}
}

// goldenVantage are the sets for k = 3 in New(replica-0..4, 0) with
// replica-0 and 1 in zone a, 2 and 3 in b and 4 in c, recorded from this
// implementation and checked against referenceVantagePoints. See
// TestVantagePointsPinned before changing any of them.
var goldenVantage = map[string][]string{
	"default/example":  {"replica-1", "replica-3", "replica-4"},
	"ns-0/checker-0":   {"replica-4", "replica-3", "replica-1"},
	"ns-1/checker-1":   {"replica-2", "replica-4", "replica-1"},
	"ns-2/checker-2":   {"replica-2", "replica-0", "replica-4"},
	"ns-3/checker-3":   {"replica-3", "replica-1", "replica-4"},
	"ns-7/checker-7":   {"replica-3", "replica-0", "replica-4"},
	"ns-10/checker-10": {"replica-1", "replica-3", "replica-4"},
	"ns-11/checker-11": {"replica-2", "replica-1", "replica-4"},
}

// TestVantagePointsLargeRing covers what the property tests do not: more
// than 256 members (the bitset of reached members leaves the stack), k above
// the stack buffers, and zoneOf called at most twice per member and call.
func TestVantagePointsLargeRing(t *testing.T) {
	members := seededPodNames(8, 300)
	zones := randomZones(members, 8)
	const vnodes = 10
	r, ref := New(members, vnodes), newReferenceRing(members, vnodes)
	for _, key := range testKeys(200) {
		for _, k := range []int{3, 5, 12} {
			calls := map[string]int{}
			zoneOf := func(m string) string { calls[m]++; return zones[m] }
			got := r.VantagePoints(key, k, zoneOf)
			for m, n := range calls {
				require.LessOrEqual(t, n, 2, "key %q k=%d: zoneOf(%s) called %d times", key, k, m, n)
			}
			require.Equal(t, ref.vantagePoints(key, k, zoneOf), got, "key %q k=%d", key, k)
		}
	}
}
