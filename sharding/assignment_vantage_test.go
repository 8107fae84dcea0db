package sharding

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/sharding/ring"
)

// changesOf runs ownershipChanges over keys, each asking for k vantage
// points, and returns the keys of each kind of change.
func changesOf(before, after *assignment, id string, keys []types.NamespacedName, k int) (gained, lost, regrouped []types.NamespacedName) {
	cs := make([]Checker, len(keys))
	for i, key := range keys {
		cs[i] = Checker{Key: key, VantagePoints: k}
	}
	g, l, r := ownershipChanges(before, after, id, cs)
	return keysOf(g, k), keysOf(l, k), keysOf(r, k)
}

// keysOf returns the keys of cs (nil when none), each of which must ask for
// k vantage points: ownershipChanges passes the checkers through.
func keysOf(cs []Checker, k int) []types.NamespacedName {
	var keys []types.NamespacedName
	for _, c := range cs {
		if c.VantagePoints != k {
			panic("ownershipChanges changed a checker's vantage points")
		}
		keys = append(keys, c.Key)
	}
	return keys
}

// zoned returns an assignment of the members of zones, each in its zone
// ("" for unknown).
func zoned(fenced bool, zones map[string]string) *assignment {
	known := map[string]string{}
	for m, z := range zones {
		if z != "" {
			known[m] = z
		}
	}
	return &assignment{ring: ring.New(slices.Collect(maps.Keys(zones)), 0), zones: known, fenced: fenced}
}

// with returns zones with the given members added or changed ("-" as a
// zone removes a member).
func with(zones map[string]string, changes ...string) map[string]string {
	out := maps.Clone(zones)
	for i := 0; i < len(changes); i += 2 {
		if changes[i+1] == "-" {
			delete(out, changes[i])
		} else {
			out[changes[i]] = changes[i+1]
		}
	}
	return out
}

// setOf is the reference: the vantage points of key asking for k under a,
// straight from the ring, and whether me is one of them (never when a is
// fenced).
func setOf(a *assignment, key types.NamespacedName, k int) (set []string, in bool) {
	set = a.ring.VantagePoints(ring.Key(key.Namespace, key.Name), max(k, 1), func(m string) string { return a.zones[m] })
	return set, !a.fenced && slices.Contains(set, me)
}

// expect is what a scenario requires of one kind of change.
type expect int

const (
	anyChanges expect = iota // whatever the reference says
	noChanges
	someChanges
	allKeys
)

func (e expect) check(t *testing.T, what string, got []types.NamespacedName) {
	t.Helper()
	switch e {
	case noChanges:
		assert.Empty(t, got, what)
	case someChanges:
		assert.NotEmpty(t, got, "%s: none, the scenario would prove nothing", what)
	case allKeys:
		assert.Equal(t, propertyKeys, got, what)
	}
}

// TestVantageChanges checks ownershipChanges with three vantage points and
// zones on scenarios, against the reference for every key (gained: me
// enters the set, lost: leaves it, regrouped: in both and the ordered set
// differs), and what each scenario implies: a member that joins never puts
// this replica into a set, one that leaves never takes it out; only a
// member of this replica's zone competes with it; the owner of a set may
// change while this replica stays in it (regrouped, not gained).
func TestVantageChanges(t *testing.T) {
	const k = 3
	base := map[string]string{me: "a", "b": "b", "c": "c", "d": "a", "e": "b"}
	tests := map[string]struct {
		before, after           *assignment
		gained, lost, regrouped expect
		ownerMoves              bool   // some regrouped key changes owner
		onlyWith                string // every change involves this member's sets
	}{
		"nothing changes": {before: zoned(false, base), after: zoned(false, base), gained: noChanges, lost: noChanges, regrouped: noChanges},
		"another member joins in this replica's zone": {before: zoned(false, base), after: zoned(false, with(base, "f", "a")),
			gained: noChanges, lost: someChanges, regrouped: noChanges, onlyWith: "f"},
		"another member joins in another zone": {before: zoned(false, base), after: zoned(false, with(base, "f", "b")),
			gained: noChanges, lost: noChanges, regrouped: someChanges, ownerMoves: true, onlyWith: "f"},
		"another member of this replica's zone leaves": {before: zoned(false, base), after: zoned(false, with(base, "d", "-")),
			gained: someChanges, lost: noChanges, regrouped: noChanges, onlyWith: "d"},
		"the only member of a zone leaves": {before: zoned(false, base), after: zoned(false, with(base, "c", "-")),
			lost: noChanges, regrouped: someChanges, ownerMoves: true, onlyWith: "c"},
		"another member changes zone": {before: zoned(false, base), after: zoned(false, with(base, "e", "c")),
			regrouped: someChanges, onlyWith: "e"},
		"another member's zone becomes unknown": {before: zoned(false, base), after: zoned(false, with(base, "c", "")), onlyWith: "c"},
		"fencing on":                            {before: zoned(false, base), after: zoned(true, base), gained: noChanges, lost: someChanges, regrouped: noChanges},
		"fencing off":                           {before: zoned(true, base), after: zoned(false, base), gained: someChanges, lost: noChanges, regrouped: noChanges},
		"fenced while a member joins": {before: zoned(true, base), after: zoned(true, with(base, "f", "c")),
			gained: noChanges, lost: noChanges, regrouped: noChanges},
		"this replica joins": {before: zoned(false, with(base, me, "-")), after: zoned(false, base),
			gained: someChanges, lost: noChanges, regrouped: noChanges},
		"this replica leaves": {before: zoned(false, base), after: zoned(false, with(base, me, "-")),
			gained: noChanges, lost: someChanges, regrouped: noChanges},
		"fewer members than vantage points, a third joins": {before: zoned(false, map[string]string{me: "a", "b": "b"}),
			after: zoned(false, map[string]string{me: "a", "b": "b", "c": "c"}), gained: noChanges, lost: noChanges, regrouped: allKeys},
		"first assignment": {before: zoned(true, nil), after: zoned(false, base), gained: someChanges, lost: noChanges, regrouped: noChanges},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gained, lost, regrouped := changesOf(tc.before, tc.after, me, propertyKeys, k)
			want := map[string][]types.NamespacedName{}
			for _, key := range propertyKeys {
				was, wasIn := setOf(tc.before, key, k)
				is, isIn := setOf(tc.after, key, k)
				switch {
				case isIn && !wasIn:
					want["gained"] = append(want["gained"], key)
				case wasIn && !isIn:
					want["lost"] = append(want["lost"], key)
				case wasIn && !slices.Equal(was, is):
					want["regrouped"] = append(want["regrouped"], key)
				default:
					continue
				}
				if tc.onlyWith != "" {
					assert.True(t, slices.Contains(was, tc.onlyWith) || slices.Contains(is, tc.onlyWith),
						"%s changed, but %s is in neither %v nor %v", key, tc.onlyWith, was, is)
				}
			}
			assert.Equal(t, want["gained"], gained, "gained")
			assert.Equal(t, want["lost"], lost, "lost")
			assert.Equal(t, want["regrouped"], regrouped, "regrouped")
			tc.gained.check(t, "gained", gained)
			tc.lost.check(t, "lost", lost)
			tc.regrouped.check(t, "regrouped", regrouped)
			if tc.ownerMoves {
				assert.True(t, slices.ContainsFunc(regrouped, func(key types.NamespacedName) bool {
					rk := ring.Key(key.Namespace, key.Name)
					return tc.before.ring.Owner(rk) != tc.after.ring.Owner(rk)
				}), "no regrouped key changed owner")
			}
		})
	}
}

// drawZoned returns a random assignment of members of propertyPool in
// random zones (some unknown).
func (g memberships) drawZoned() *assignment {
	zones := map[string]string{}
	for _, m := range g.draw() {
		zones[m] = []string{"a", "b", "c", ""}[g.rng.IntN(4)]
	}
	return zoned(g.rng.IntN(4) == 0, zones)
}

// TestVantageChangesAreTheDifference checks, for random memberships, zones,
// fencing and numbers of vantage points, that every checker is reported as
// the reference says, at most once and in the order of the checkers; and
// that the assignment's probes agrees with the reference.
func TestVantageChangesAreTheDifference(t *testing.T) {
	g := newMemberships(40)
	counts := map[string]int{}
	for trial := range trials {
		before, after := g.drawZoned(), g.drawZoned()
		if g.rng.IntN(2) == 0 { // half the trials change one member only
			after = zoned(g.rng.IntN(8) == 0, with(zonesOf(before), propertyPool[g.rng.IntN(len(propertyPool))], []string{"a", "b", "-"}[g.rng.IntN(3)]))
		}
		k := 2 + g.rng.IntN(4)
		checkers := make([]Checker, len(propertyKeys))
		for i, key := range propertyKeys {
			checkers[i] = Checker{Key: key, VantagePoints: k}
		}
		gained, lost, regrouped := ownershipChanges(before, after, me, checkers)
		got := map[types.NamespacedName]string{}
		for kind, cs := range map[string][]Checker{"gained": gained, "lost": lost, "regrouped": regrouped} {
			require.True(t, slices.IsSortedFunc(cs, func(a, b Checker) int { return indexOf(a.Key) - indexOf(b.Key) }), "trial %d: %s out of order", trial, kind)
			for _, c := range cs {
				require.NotContains(t, got, c.Key, "trial %d: %s reported twice", trial, c.Key)
				got[c.Key] = kind
			}
		}
		for _, key := range propertyKeys {
			was, wasIn := setOf(before, key, k)
			is, isIn := setOf(after, key, k)
			want := ""
			switch {
			case isIn && !wasIn:
				want = "gained"
			case wasIn && !isIn:
				want = "lost"
			case wasIn && !slices.Equal(was, is):
				want = "regrouped"
			}
			require.Equal(t, want, got[key], "trial %d, k=%d: %s, %v -> %v", trial, k, key, was, is)
			require.Equal(t, isIn, after.probes(me, key, k), "trial %d: probes(%s)", trial, key)
			counts[want]++
		}
	}
	for _, kind := range []string{"gained", "lost", "regrouped"} {
		require.Positive(t, counts[kind], "no trial %s a checker: the property was never exercised", kind)
	}
}

// zonesOf returns every member of a with its zone ("" for unknown).
func zonesOf(a *assignment) map[string]string {
	zones := map[string]string{}
	for _, m := range a.ring.Members() {
		zones[m] = a.zones[m]
	}
	return zones
}

// indexOf returns key's index in propertyKeys.
func indexOf(key types.NamespacedName) int {
	return slices.Index(propertyKeys, key)
}

// TestOneVantagePointIgnoresZones checks, for random memberships and zones,
// that with one vantage point (or fewer asked for) the changes are those
// of the owner, whatever the zones, and that probes is owns.
func TestOneVantagePointIgnoresZones(t *testing.T) {
	g := newMemberships(50)
	for trial := range trials {
		before, after := g.drawZoned(), g.drawZoned()
		plain := func(a *assignment) *assignment { return &assignment{ring: a.ring, fenced: a.fenced} }
		wantGained, wantLost, _ := changesOf(plain(before), plain(after), me, propertyKeys, 1)
		for _, k := range []int{-1, 0, 1} {
			gained, lost, regrouped := changesOf(before, after, me, propertyKeys, k)
			require.Equal(t, wantGained, gained, "trial %d, k=%d", trial, k)
			require.Equal(t, wantLost, lost, "trial %d, k=%d", trial, k)
			require.Empty(t, regrouped, "trial %d, k=%d", trial, k)
		}
		for _, key := range propertyKeys[:20] {
			require.Equal(t, after.owns(me, key), after.probes(me, key, 1), "trial %d: %s", trial, key)
			require.Equal(t, after.owns(me, key), after.probes(me, key, 0), "trial %d: %s", trial, key)
		}
	}
}

// TestAssignmentVantagePoints checks the assignment's sets: owner first,
// min(k, members) distinct members, one per zone while zones last, and
// the same set for a fenced assignment.
func TestAssignmentVantagePoints(t *testing.T) {
	zones := map[string]string{me: "a", "b": "a", "c": "b", "d": "c", "e": ""}
	a, fenced := zoned(false, zones), zoned(true, zones)
	tests := []struct {
		k, wantLen, wantZones int
	}{
		{k: -1, wantLen: 1, wantZones: 1}, {k: 0, wantLen: 1, wantZones: 1}, {k: 1, wantLen: 1, wantZones: 1},
		{k: 2, wantLen: 2, wantZones: 2}, {k: 3, wantLen: 3, wantZones: 3}, {k: 4, wantLen: 4, wantZones: 4},
		// Five members in four zones ("" counting as one).
		{k: 5, wantLen: 5, wantZones: 4}, {k: 9, wantLen: 5, wantZones: 4},
	}
	for _, tc := range tests {
		for _, key := range propertyKeys[:50] {
			set := a.vantagePoints(key, tc.k)
			require.Len(t, set, tc.wantLen, "k=%d, %s", tc.k, key)
			require.Equal(t, a.ring.Owner(ring.Key(key.Namespace, key.Name)), set[0], "k=%d, %s: owner first", tc.k, key)
			distinct := map[string]bool{}
			for _, m := range set {
				distinct[zones[m]] = true
			}
			require.Len(t, distinct, tc.wantZones, "k=%d, %s: zones of %v", tc.k, key, set)
			require.Equal(t, set, fenced.vantagePoints(key, tc.k), "fencing changes no set")
		}
	}
	assert.Empty(t, zoned(false, nil).vantagePoints(propertyKeys[0], 3), "empty ring")
}
