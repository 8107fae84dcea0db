package sharding

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/sharding/ring"
)

const me = "me"

func assign(fenced bool, members ...string) *assignment {
	return &assignment{ring: ring.New(members, 0), fenced: fenced}
}

func checkers(names ...string) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(names))
	for _, n := range names {
		keys = append(keys, types.NamespacedName{Namespace: "default", Name: n})
	}
	return keys
}

// TestOwnershipChanges pins the decision on ten checkers. Their owners, from
// the pinned ring: with members {me} "me" owns all; with {me, b} it owns c,
// e, g, i; with {me, b, c} it owns c, g, i (c takes e); with {b, c} none.
func TestOwnershipChanges(t *testing.T) {
	all := checkers("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	tests := map[string]struct {
		before, after *assignment
		gained, lost  []types.NamespacedName
	}{
		"ring of one, nothing changes":   {before: assign(false, me), after: assign(false, me)},
		"ring of three, nothing changes": {before: assign(false, me, "b", "c"), after: assign(false, me, "b", "c")},
		"first assignment, ring of one": {
			before: assign(true), after: assign(false, me),
			gained: all,
		},
		"ring of one, a member joins": {
			before: assign(false, me), after: assign(false, me, "b"),
			lost: checkers("a", "b", "d", "f", "h", "j"),
		},
		"ring of two, a member leaves": {
			before: assign(false, me, "b"), after: assign(false, me),
			gained: checkers("a", "b", "d", "f", "h", "j"),
		},
		"ring of two, a third member joins": {
			before: assign(false, me, "b"), after: assign(false, me, "b", "c"),
			lost: checkers("e"),
		},
		"ring of three, another member leaves": {
			before: assign(false, me, "b", "c"), after: assign(false, me, "b"),
			gained: checkers("e"),
		},
		"this replica joins a ring of two": {
			before: assign(false, "b", "c"), after: assign(false, me, "b", "c"),
			gained: checkers("c", "g", "i"),
		},
		"this replica leaves a ring of three": {
			before: assign(false, me, "b", "c"), after: assign(false, "b", "c"),
			lost: checkers("c", "g", "i"),
		},
		"fencing on": {
			before: assign(false, me, "b"), after: assign(true, me, "b"),
			lost: checkers("c", "e", "g", "i"),
		},
		"fencing off": {
			before: assign(true, me, "b"), after: assign(false, me, "b"),
			gained: checkers("c", "e", "g", "i"),
		},
		"fenced while a member joins": {before: assign(true, me, "b"), after: assign(true, me, "b", "c")},
		"fencing lifted as a member joins": {
			before: assign(true, me, "b"), after: assign(false, me, "b", "c"),
			gained: checkers("c", "g", "i"),
		},
		"not a member while others change": {before: assign(false, "b"), after: assign(false, "b", "c")},
		"empty rings":                      {before: assign(false), after: assign(false)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, k := range []int{0, 1} { // below 1 means 1
				gained, lost, regrouped := changesOf(tc.before, tc.after, me, all, k)
				assert.Equal(t, tc.gained, gained, "gained, k=%d", k)
				assert.Equal(t, tc.lost, lost, "lost, k=%d", k)
				assert.Empty(t, regrouped, "regrouped, k=%d", k)
			}
		})
	}
}

// The property tests below check ownershipChanges against random
// memberships of propertyPool over propertyKeys. Their seeds are fixed so
// that a failure can be replayed.
const trials = 200

var (
	propertyPool = []string{me, "webchecker-0", "webchecker-1", "webchecker-2", "webchecker-3", "webchecker-4", "webchecker-5", "webchecker-6"}
	propertyKeys = func() []types.NamespacedName {
		keys := make([]types.NamespacedName, 300)
		for i := range keys {
			keys[i] = types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("checker-%d", i)}
		}
		return keys
	}()
)

// memberships draws random memberships.
type memberships struct{ rng *rand.Rand }

func newMemberships(seed uint64) memberships {
	return memberships{rng: rand.New(rand.NewPCG(seed, seed))}
}

// draw returns a random subset of propertyPool.
func (g memberships) draw() []string {
	var ms []string
	for _, m := range propertyPool {
		if g.rng.IntN(2) == 0 {
			ms = append(ms, m)
		}
	}
	return ms
}

// otherIn draws a member of ms other than me; ok is false when there is
// none.
func (g memberships) otherIn(ms []string) (m string, ok bool) {
	others := slices.DeleteFunc(slices.Clone(ms), func(m string) bool { return m == me })
	if len(others) == 0 {
		return "", false
	}
	return others[g.rng.IntN(len(others))], true
}

// notIn returns the members of propertyPool missing from ms.
func notIn(ms []string) []string {
	return slices.DeleteFunc(slices.Clone(propertyPool), func(m string) bool { return slices.Contains(ms, m) })
}

// ownedKeys returns the set of propertyKeys that me owns under a.
func ownedKeys(a *assignment) map[types.NamespacedName]bool {
	set := map[types.NamespacedName]bool{}
	for _, k := range propertyKeys {
		if a.owns(me, k) {
			set[k] = true
		}
	}
	return set
}

// TestOwnershipChangesAreTheDifference checks, for random memberships and
// fencing before and after, that every gained key is owned after and not
// before, every lost key the other way round, that no key is both, and that
// owned before - lost + gained = owned after.
func TestOwnershipChangesAreTheDifference(t *testing.T) {
	g := newMemberships(10)
	changed := 0
	for trial := range trials {
		before, after := assign(g.rng.IntN(4) == 0, g.draw()...), assign(g.rng.IntN(4) == 0, g.draw()...)
		gained, lost, regrouped := changesOf(before, after, me, propertyKeys, 1)
		require.Empty(t, regrouped, "trial %d: regrouped with one vantage point", trial)
		was, is := ownedKeys(before), ownedKeys(after)
		for _, k := range gained {
			require.True(t, is[k] && !was[k], "trial %d: gained %s, owned before %t, after %t", trial, k, was[k], is[k])
		}
		for _, k := range lost {
			require.True(t, was[k] && !is[k], "trial %d: lost %s, owned before %t, after %t", trial, k, was[k], is[k])
		}
		for _, k := range lost {
			delete(was, k)
		}
		for _, k := range gained {
			require.False(t, was[k], "trial %d: %s gained and lost, or gained twice", trial, k)
			was[k] = true
		}
		require.Equal(t, is, was, "trial %d: %v -> %v", trial, before.ring.Members(), after.ring.Members())
		changed += len(gained) + len(lost)
	}
	require.Positive(t, changed, "no trial changed ownership: the property was never exercised")
}

// TestOwnershipMovesOnlyWithTheChangedMember checks, for random
// memberships, that when another member joins or leaves this replica's
// keys move one way only, and only to or from that member.
func TestOwnershipMovesOnlyWithTheChangedMember(t *testing.T) {
	tests := map[string]struct {
		// draw changes ms by one member other than me; ok is false when
		// ms allows no such change.
		draw func(g memberships, ms []string) (before, after []string, other string, ok bool)
	}{
		"another member joins: this replica only loses keys, to it": {draw: func(g memberships, ms []string) ([]string, []string, string, bool) {
			joiner, ok := g.otherIn(notIn(ms))
			return ms, append(slices.Clone(ms), joiner), joiner, ok
		}},
		"another member leaves: this replica only gains its keys": {draw: func(g memberships, ms []string) ([]string, []string, string, bool) {
			leaver, ok := g.otherIn(ms)
			return ms, slices.DeleteFunc(slices.Clone(ms), func(m string) bool { return m == leaver }), leaver, ok
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := newMemberships(20)
			moved := 0
			for trial := range trials {
				ms, changed, other, ok := tc.draw(g, g.draw())
				if !ok {
					continue
				}
				before, after := assign(false, ms...), assign(false, changed...)
				gained, lost, _ := changesOf(before, after, me, propertyKeys, 1)
				// A join only takes keys away, to the joiner (their owner
				// after); a leave only hands out the leaver's (their
				// owner before).
				moving, none, withOther := lost, gained, after
				if len(changed) < len(ms) {
					moving, none, withOther = gained, lost, before
				}
				require.Empty(t, none, "trial %d: %v -> %v", trial, ms, changed)
				for _, k := range moving {
					require.Equal(t, other, withOther.ring.Owner(ring.Key(k.Namespace, k.Name)), "trial %d: %s moved, %v -> %v", trial, k, ms, changed)
				}
				moved += len(moving)
			}
			require.Positive(t, moved, "no trial moved a key: the property was never exercised")
		})
	}
}

// TestFencingMovesEveryOwnedKey checks, for random memberships, that
// fencing loses every owned key and gains none, and that unfencing gains
// the same keys back, whether the fenced assignment keeps the ring itself
// (as publish does) or an equal one; and that a change of the ring while
// fenced moves nothing.
func TestFencingMovesEveryOwnedKey(t *testing.T) {
	for name, fence := range map[string]func(a *assignment, ms []string) *assignment{
		"same ring":  func(a *assignment, _ []string) *assignment { return &assignment{ring: a.ring, fenced: true} },
		"equal ring": func(_ *assignment, ms []string) *assignment { return assign(true, ms...) },
	} {
		t.Run(name, func(t *testing.T) {
			g := newMemberships(30)
			moved := 0
			for trial := range trials {
				ms := g.draw()
				unfenced := assign(false, ms...)
				fenced := fence(unfenced, ms)
				gained, lost, _ := changesOf(unfenced, fenced, me, propertyKeys, 1)
				require.Empty(t, gained, "trial %d", trial)
				require.Len(t, lost, len(ownedKeys(unfenced)), "trial %d", trial)
				regained, relost, _ := changesOf(fenced, unfenced, me, propertyKeys, 1)
				require.Empty(t, relost, "trial %d", trial)
				require.Equal(t, lost, regained, "trial %d", trial)
				gained, lost, _ = changesOf(fenced, assign(true, g.draw()...), me, propertyKeys, 1)
				require.Empty(t, gained, "trial %d: gained while fenced", trial)
				require.Empty(t, lost, "trial %d: lost while fenced", trial)
				moved += len(regained)
			}
			require.Positive(t, moved, "no trial owned a key: the property was never exercised")
		})
	}
}

// BenchmarkOwnershipChanges compares 100,000 checkers of one vantage point
// between two assignments of ten members: one member gone (two ring
// lookups per checker), and this replica fenced on the same ring (one:
// what every fencing and unfencing costs).
func BenchmarkOwnershipChanges(b *testing.B) {
	members := make([]string, 10)
	for i := range members {
		members[i] = fmt.Sprintf("replica-%c", 'a'+i)
	}
	me := members[0]
	checkers := make([]Checker, 100_000)
	for i := range checkers {
		checkers[i] = Checker{Key: types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("wc-%d", i)}, VantagePoints: 1}
	}
	all := &assignment{ring: ring.New(members, ring.DefaultVirtualNodes)}
	for name, after := range map[string]*assignment{
		"member left": {ring: ring.New(members[:9], ring.DefaultVirtualNodes)},
		"fenced":      {ring: all.ring, fenced: true},
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ownershipChanges(all, after, me, checkers)
			}
		})
	}
}

// keyOwnedBy returns a key that owner owns in a ring of members.
func keyOwnedBy(t *testing.T, owner string, members ...string) types.NamespacedName {
	t.Helper()
	r := ring.New(members, ring.DefaultVirtualNodes)
	for i := range 1000 {
		key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("c-%d", i)}
		if r.Owner(ring.Key(key.Namespace, key.Name)) == owner {
			return key
		}
	}
	t.Fatalf("%s owns none of 1000 keys in %v", owner, members)
	return types.NamespacedName{}
}

func TestUnprobedSince(t *testing.T) {
	const self, peer, other = "self", "peer", "other"
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fencedAt, renewedAt := now.Add(-30*time.Second), now.Add(-9*time.Second)
	tests := []struct {
		name          string
		before, after []string
		beforeFenced  bool
		// prevOwner owns the key under before (empty: nobody).
		prevOwner string
		lastSeen  map[string]time.Time
		// released: when the members that released their Lease stopped
		// probing.
		released map[string]time.Time
		// acquired is when this replica acquired its own Lease.
		acquired time.Time
		want     time.Time
		// tolerant: the tolerance is the own Lease's duration (else 0).
		tolerant bool
	}{
		{name: "start-up: nobody owned it", after: []string{self}, want: time.Time{}},
		{name: "fencing lifted: since this replica fenced itself", before: []string{self, peer}, after: []string{self, peer}, beforeFenced: true, prevOwner: self, want: fencedAt, tolerant: true},
		// The renewal was written before this replica saw it: a turn due
		// in between may have been missed (a bench's kill -9 left one
		// unprobed for interval + 20 s when the renewal written right
		// before the turn was seen right after it).
		{name: "owner crashed, Lease still there: since its last renewal seen here, less the slack", before: []string{self, peer}, after: []string{self}, prevOwner: peer,
			lastSeen: map[string]time.Time{peer: renewedAt, self: now}, want: renewedAt.Add(-handOverSlack)},
		{name: "owner stopped and deleted its Lease: the hand-over slack", before: []string{self, peer}, after: []string{self}, prevOwner: peer,
			lastSeen: map[string]time.Time{self: now}, want: now.Add(-handOverSlack)},
		{name: "owner stopped and deleted its Lease, marked: since it stopped probing", before: []string{self, peer}, after: []string{self}, prevOwner: peer,
			lastSeen: map[string]time.Time{self: now}, released: map[string]time.Time{peer: now.Add(-40 * time.Millisecond)}, want: now.Add(-40 * time.Millisecond)},
		{name: "owner stopped, its clock ahead: since it stopped probing, after this replica's now", before: []string{self, peer}, after: []string{self}, prevOwner: peer,
			lastSeen: map[string]time.Time{self: now}, released: map[string]time.Time{peer: now.Add(300 * time.Millisecond)}, want: now.Add(300 * time.Millisecond)},
		{name: "another member's release does not count", before: []string{self, peer}, after: []string{self}, prevOwner: peer,
			lastSeen: map[string]time.Time{self: now}, released: map[string]time.Time{other: now.Add(-40 * time.Millisecond)}, want: now.Add(-handOverSlack)},
		{name: "owner's Lease expired and still there: its last renewal, whatever a release says", before: []string{self, peer}, after: []string{self}, prevOwner: peer,
			lastSeen: map[string]time.Time{peer: renewedAt, self: now}, released: map[string]time.Time{peer: now.Add(-40 * time.Millisecond)}, want: renewedAt.Add(-handOverSlack)},
		{name: "owner stays (this replica joined), own Lease unknown: the hand-over slack", before: []string{peer, other}, after: []string{self, peer, other}, prevOwner: "",
			lastSeen: map[string]time.Time{peer: renewedAt, other: renewedAt}, want: now.Add(-handOverSlack), tolerant: true},
		{name: "owner stays (this replica joined): since this replica acquired its Lease", before: []string{peer, other}, after: []string{self, peer, other}, prevOwner: "",
			lastSeen: map[string]time.Time{peer: renewedAt, other: renewedAt}, acquired: now.Add(-200 * time.Millisecond), want: now.Add(-200 * time.Millisecond), tolerant: true},
		{name: "owner stays (this replica came back after fencing): since it fenced itself", before: []string{peer, other}, after: []string{self, peer, other}, beforeFenced: true, prevOwner: "",
			lastSeen: map[string]time.Time{peer: renewedAt, other: renewedAt}, acquired: now.Add(-time.Hour), want: fencedAt, tolerant: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var key types.NamespacedName
			switch {
			case tt.before == nil:
				key = keyOwnedBy(t, self, tt.after...)
			case tt.prevOwner == "":
				// Owned by self after, by a member that stays before.
				for i := range 1000 {
					key = types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("c-%d", i)}
					b := ring.New(tt.before, ring.DefaultVirtualNodes).Owner(ring.Key(key.Namespace, key.Name))
					a := ring.New(tt.after, ring.DefaultVirtualNodes).Owner(ring.Key(key.Namespace, key.Name))
					if a == self && b != "" {
						break
					}
				}
			default:
				key = keyOwnedBy(t, tt.prevOwner, tt.before...)
			}
			before := &assignment{ring: ring.New(tt.before, ring.DefaultVirtualNodes), fenced: tt.beforeFenced, at: fencedAt}
			after := &assignment{ring: ring.New(tt.after, ring.DefaultVirtualNodes), at: now}
			require.True(t, after.owns(self, key), "the test key is not gained")
			own := ownLease{acquired: tt.acquired, duration: 10 * time.Second}
			since, tolerance := unprobedSince(before, self, key, after, leftMembers{lastSeen: tt.lastSeen, released: tt.released}, own, now)
			assert.Equal(t, tt.want, since)
			if tt.tolerant {
				assert.Equal(t, own.duration, tolerance)
			} else {
				assert.Zero(t, tolerance)
			}
		})
	}
}
