package ring

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// movementKs are the numbers of vantage points the movement tests ask for.
var movementKs = []int{1, 3, 5}

// requireGrown checks the guarantee for a key when member joined: small is
// the key's set without it, big with it. It is stated once for both
// directions (a member that leaves turns big into small):
//   - big holds no old member that small lacks, so at most one of small's
//     members is displaced, and exactly min(k, N) are chosen;
//   - if member is not in big, nothing changed, order included;
//   - without zones, big without member is a prefix of small.
func requireGrown(t *testing.T, small, big []string, member string, k, n int, zoned bool, key string) {
	t.Helper()
	if len(big) != min(k, n) {
		t.Fatalf("key %q k=%d: %q has %d members, want %d", key, k, big, len(big), min(k, n))
	}
	at := slices.Index(big, member)
	if at < 0 {
		if !slices.Equal(small, big) {
			t.Fatalf("key %q k=%d: %q -> %q changed without %s", key, k, small, big, member)
		}
		return
	}
	rest := slices.Delete(slices.Clone(big), at, at+1)
	for _, m := range rest {
		if !slices.Contains(small, m) {
			t.Fatalf("key %q k=%d: %s entered %q -> %q with %s", key, k, m, small, big, member)
		}
	}
	if !zoned && !slices.Equal(small[:len(rest)], rest) {
		t.Fatalf("key %q k=%d: order changed: %q -> %q with %s", key, k, small, big, member)
	}
}

// TestVantagePointsAddMember checks property 4 for a joining member: every
// key's new set is a subset of its old set plus the new member, unchanged
// sets are identical, and without zones the old members keep their order.
// The keys whose owner becomes the new member are included: their sets too
// lose at most one member.
func TestVantagePointsAddMember(t *testing.T) {
	keys := testKeys(numKeys)
	for name, tc := range vantageCases() {
		t.Run(name, func(t *testing.T) {
			zoneOf := tc.zoneOf()
			zoned := tc.zoneCount() > 1
			for n := 2; n <= len(tc.members); n++ {
				before, after := New(tc.members[:n-1], 0), New(tc.members[:n], 0)
				added := tc.members[n-1]
				for _, k := range movementKs {
					changed, newOwner := 0, 0
					for _, key := range keys {
						old, cur := before.VantagePoints(key, k, zoneOf), after.VantagePoints(key, k, zoneOf)
						requireGrown(t, old, cur, added, k, n, zoned, key)
						if !slices.Equal(old, cur) {
							changed++
						}
						if cur[0] != old[0] {
							newOwner++
						}
					}
					frac, fair := float64(changed)/numKeys, float64(min(k, n))/float64(n)
					t.Logf("N=%2d k=%d: %.4f of sets changed (%.2fx k/N), %d new owners", n, k, frac, frac/fair, newOwner)
					if !zoned {
						assert.InDelta(t, 1, frac/fair, 0.25, "N=%d k=%d", n, k)
					}
				}
			}
		})
	}
}

// TestVantagePointsRemoveMember checks property 4 for a leaving member: the
// sets it was not in are identical, the others keep all their other members
// (in order without zones) and gain at most one. Every member is removed in
// turn, owners included.
func TestVantagePointsRemoveMember(t *testing.T) {
	keys := testKeys(numKeys)
	for name, tc := range vantageCases() {
		t.Run(name, func(t *testing.T) {
			zoneOf := tc.zoneOf()
			zoned := tc.zoneCount() > 1
			n := len(tc.members)
			full := New(tc.members, 0)
			for gone := range n {
				rest := slices.Delete(slices.Clone(tc.members), gone, gone+1)
				after := New(rest, 0)
				for _, k := range movementKs {
					changed := 0
					for _, key := range keys {
						old, cur := full.VantagePoints(key, k, zoneOf), after.VantagePoints(key, k, zoneOf)
						if len(cur) != min(k, n-1) {
							t.Fatalf("key %q k=%d: %q without %s", key, k, cur, tc.members[gone])
						}
						requireGrown(t, cur, old, tc.members[gone], k, n, zoned, key)
						if !slices.Equal(old, cur) {
							changed++
						}
					}
					frac, fair := float64(changed)/numKeys, float64(min(k, n))/float64(n)
					if gone == 0 {
						t.Logf("N=%2d k=%d removing %s: %.4f of sets changed (%.2fx k/N)", n, k, tc.members[gone], frac, frac/fair)
					}
					if !zoned {
						assert.InDelta(t, 1, frac/fair, 0.25, "N=%d k=%d gone=%d", n, k, gone)
					}
				}
			}
		})
	}
}

// TestVantagePointsLoad checks property 5: with k = 3 and three zones of
// three members each, every set has one member per zone and every member is
// in about k/N of the sets; likewise without zones.
func TestVantagePointsLoad(t *testing.T) {
	keys := testKeys(numKeys)
	const k = 3
	for _, seed := range []uint64{21, 22, 23, 24, 25} {
		for _, zoned := range []bool{true, false} {
			names := seededPodNames(seed, 9)
			zones := assignZones(names, "a", "b", "c")
			var zoneOf func(string) string
			if zoned {
				zoneOf = func(m string) string { return zones[m] }
			}
			r := New(names, 0)
			c := map[string]int{}
			for _, key := range keys {
				set := r.VantagePoints(key, k, zoneOf)
				for _, m := range set {
					c[m]++
				}
				if zoned {
					got := []string{zones[set[0]], zones[set[1]], zones[set[2]]}
					slices.Sort(got)
					require.Equal(t, []string{"a", "b", "c"}, got, "key %q: %q", key, set)
				}
			}
			require.Len(t, c, len(names))
			mean := float64(numKeys*k) / float64(len(names))
			lo, hi := numKeys, 0
			for _, v := range c {
				lo, hi = min(lo, v), max(hi, v)
			}
			t.Logf("seed %d zoned=%t: max/mean %.3f min/mean %.3f", seed, zoned, float64(hi)/mean, float64(lo)/mean)
			assert.LessOrEqual(t, float64(hi)/mean, 1.15, "seed %d zoned=%t", seed, zoned)
			assert.GreaterOrEqual(t, float64(lo)/mean, 0.85, "seed %d zoned=%t", seed, zoned)
		}
	}
}
