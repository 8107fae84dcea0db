package sharding_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/sharding"
	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

// withVantagePoints returns keys as checkers asking for k vantage points.
func withVantagePoints(k int, keys []types.NamespacedName) []sharding.Checker {
	cs := make([]sharding.Checker, len(keys))
	for i, key := range keys {
		cs[i] = sharding.Checker{Key: key, VantagePoints: k}
	}
	return cs
}

// mixedCheckers gives test key i 1 + i%5 vantage points: every number
// the API allows.
var mixedCheckers = func() []sharding.Checker {
	cs := withVantagePoints(0, testKeys)
	for i := range cs {
		cs[i].VantagePoints = 1 + i%5
	}
	return cs
}()

// setZone labels l with zone ("" removes the label), as its holder's
// Heartbeat would.
func setZone(t *testing.T, direct client.Client, l *coordinationv1.Lease, zone string) {
	t.Helper()
	if zone == "" {
		delete(l.Labels, membership.LabelZone)
	} else {
		l.Labels[membership.LabelZone] = zone
	}
	require.NoError(t, direct.Update(context.Background(), l))
}

// keysWith returns the keys of cs whose set of vantage points under
// members and zones includes id.
func keysWith(id string, cs []sharding.Checker, members []string, zones map[string]string) []types.NamespacedName {
	r := ring.New(members, 0)
	var keys []types.NamespacedName
	for _, c := range cs {
		set := r.VantagePoints(ring.Key(c.Key.Namespace, c.Key.Name), max(c.VantagePoints, 1), func(m string) string { return zones[m] })
		if slices.Contains(set, id) {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// TestAssignerVantagePoints runs three Assigners, in zones a, b and c,
// against one API server, with a fourth member in zone a that runs none:
// every Assigner computes the same sets, owner first, one member per zone
// while zones last; each probes exactly the checkers whose set it is in
// (for one vantage point, those it owns); fencing takes a replica's probes
// away without changing any set.
func TestAssignerVantagePoints(t *testing.T) {
	const ringName = "assigner-vantage"
	zones := map[string]string{"vp-a": "a", "vp-b": "b", "vp-c": "c", "vp-a2": "a"}
	members := []string{"vp-a", "vp-a2", "vp-b", "vp-c"}
	direct := newDirectClient(t)
	for _, m := range members {
		setZone(t, direct, createLease(t, direct, m, ringName, t0, alive), zones[m])
	}
	var ats []*assignerTest
	for _, id := range []string{"vp-a", "vp-b", "vp-c"} {
		at := startAssigner(t, direct, id, ringName, false, func(o *sharding.AssignerOptions) {
			o.Zone = zones[id]
			o.Keys = func(context.Context) ([]sharding.Checker, error) { return mixedCheckers, nil }
		})
		for _, c := range at.notified.await(t, keysWith(id, mixedCheckers, members, zones), true) {
			assert.Zero(t, c.UnprobedSince, "%s: probed by nobody before the start", c.Key)
			assert.Zero(t, c.Tolerance, "%s", c.Key)
		}
		at.awaitMembers(t, members...)
		assert.Equal(t, zones[id], at.assigner.Zone())
		ats = append(ats, at)
	}

	r := ring.New(members, 0)
	for _, key := range testKeys {
		for k := 0; k <= 6; k++ {
			points := ats[0].assigner.VantagePoints(key, k)
			require.Len(t, points, min(max(k, 1), len(members)), "%s, k=%d", key, k)
			assert.Equal(t, r.Owner(ring.Key(key.Namespace, key.Name)), points[0].Shard, "%s, k=%d: owner first", key, k)
			chosen := map[string]bool{}
			for _, p := range points {
				assert.Equal(t, zones[p.Shard], p.Zone, "%s, k=%d: zone of %s", key, k, p.Shard)
				chosen[p.Zone] = true
			}
			assert.Len(t, chosen, min(len(points), 3), "%s, k=%d: zones of %v", key, k, points)
			for _, at := range ats {
				id := at.assigner.ShardID()
				require.Equal(t, points, at.assigner.VantagePoints(key, k), "%s, k=%d: %s's set differs from vp-a's", key, k, id)
				in := slices.ContainsFunc(points, func(p sharding.VantagePoint) bool { return p.Shard == id })
				assert.Equal(t, in, at.assigner.Probes(key, k), "%s, k=%d: Probes of %s", key, k, id)
			}
			if k <= 1 {
				for _, at := range ats {
					assert.Equal(t, at.assigner.Owns(key), at.assigner.Probes(key, k), "%s, k=%d: Probes is Owns", key, k)
				}
			}
		}
	}

	// Fencing: no probes, the same sets, every probed checker lost.
	fenced := ats[1]
	before := fenced.assigner.VantagePoints(testKeys[0], 3)
	fenced.fencer.set(true)
	for _, c := range mixedCheckers {
		assert.False(t, fenced.assigner.Probes(c.Key, c.VantagePoints), "%s probed while fenced", c.Key)
	}
	fenced.notified.await(t, keysWith("vp-b", mixedCheckers, members, zones), false)
	assert.Equal(t, before, fenced.assigner.VantagePoints(testKeys[0], 3), "fencing changed a set")
}

// TestAssignerProbesOneVantagePointAsCheaplyAsOwns checks that Probes with
// one vantage point allocates no more than Owns.
func TestAssignerProbesOneVantagePointAsCheaplyAsOwns(t *testing.T) {
	const ringName, self = "assigner-probes-cost", "cost-self"
	direct := newDirectClient(t)
	createLease(t, direct, self, ringName, t0, alive)
	createLease(t, direct, "cost-peer", ringName, t0, alive)
	at := startAssigner(t, direct, self, ringName, false)
	at.awaitMembers(t, "cost-peer", self)
	key := testKeys[0]
	owns := testing.AllocsPerRun(200, func() { at.assigner.Owns(key) })
	for _, k := range []int{0, 1} {
		probes := testing.AllocsPerRun(200, func() { at.assigner.Probes(key, k) })
		assert.LessOrEqual(t, probes, owns, "k=%d: Probes allocates more than Owns", k)
	}
}

// awaitChanges waits until total changes have been notified since the
// last await and returns their keys by kind: gained, lost, regrouped.
func (n *notifications) awaitChanges(t *testing.T, total int) map[string][]types.NamespacedName {
	t.Helper()
	require.Eventually(t, func() bool { return n.count() >= total }, within, tick, "notified %d changes, want %d", n.count(), total)
	n.mu.Lock()
	defer n.mu.Unlock()
	kinds := map[string][]types.NamespacedName{}
	for _, c := range n.changes {
		kind := map[bool]string{true: "gained", false: "lost"}[c.Probes]
		if c.Regrouped {
			require.True(t, c.Probes, "%s regrouped but not probed", c.Key)
			kind = "regrouped"
		}
		kinds[kind] = append(kinds[kind], c.Key)
	}
	n.keys, n.changes = nil, nil
	return kinds
}

// vantageChanges classifies the test keys, each asking for k vantage
// points, as ownershipChanges should for id going from zones before to
// zones after, with members unchanged.
func vantageChanges(id string, k int, members []string, before, after map[string]string) map[string][]types.NamespacedName {
	r := ring.New(members, 0)
	kinds := map[string][]types.NamespacedName{}
	for _, key := range testKeys {
		rk := ring.Key(key.Namespace, key.Name)
		was := r.VantagePoints(rk, k, func(m string) string { return before[m] })
		is := r.VantagePoints(rk, k, func(m string) string { return after[m] })
		switch wasIn, isIn := slices.Contains(was, id), slices.Contains(is, id); {
		case isIn && !wasIn:
			kinds["gained"] = append(kinds["gained"], key)
		case wasIn && !isIn:
			kinds["lost"] = append(kinds["lost"], key)
		case wasIn && !slices.Equal(was, is):
			kinds["regrouped"] = append(kinds["regrouped"], key)
		}
	}
	return kinds
}

// TestAssignerRepublishesOnZoneChange checks that a change of a member's
// zone label, its Lease otherwise unchanged, is a rebalance: the sets move
// as the new zones say, and this replica is notified of what it gains,
// loses and keeps in another grouping. A Lease update that changes no zone
// changes nothing.
func TestAssignerRepublishesOnZoneChange(t *testing.T) {
	const ringName, self, k = "assigner-zone-change", "zc-self", 2
	members := []string{"zc-p1", "zc-p2", "zc-p3", self}
	zones := map[string]string{self: "a", "zc-p1": "b", "zc-p2": "c", "zc-p3": "b"}
	direct := newDirectClient(t)
	leases := map[string]*coordinationv1.Lease{}
	for _, m := range members {
		leases[m] = createLease(t, direct, m, ringName, t0, alive)
		setZone(t, direct, leases[m], zones[m])
	}
	at := startAssigner(t, direct, self, ringName, false, func(o *sharding.AssignerOptions) {
		o.Keys = func(context.Context) ([]sharding.Checker, error) { return withVantagePoints(k, testKeys), nil }
	})
	at.notified.await(t, keysWith(self, withVantagePoints(k, testKeys), members, zones), true)
	at.awaitMembers(t, members...)
	rebalances := at.assigner.Rebalances()

	for i, change := range []struct{ member, zone string }{{"zc-p3", "a"}, {"zc-p2", "b"}, {self, ""}} {
		next := map[string]string{}
		for m, z := range zones {
			next[m] = z
		}
		next[change.member] = change.zone
		want := vantageChanges(self, k, members, zones, next)
		total := len(want["gained"]) + len(want["lost"]) + len(want["regrouped"])
		require.Positive(t, total, "%s to zone %q moves nothing of %s: the step would prove nothing", change.member, change.zone, self)
		setZone(t, direct, leases[change.member], change.zone)
		got := at.notified.awaitChanges(t, total)
		for _, kind := range []string{"gained", "lost", "regrouped"} {
			assert.ElementsMatch(t, want[kind], got[kind], "%s to zone %q: %s", change.member, change.zone, kind)
		}
		assert.Equal(t, rebalances+uint64(i)+1, at.assigner.Rebalances(), "%s to zone %q: not one rebalance", change.member, change.zone)
		for _, key := range testKeys {
			for _, p := range at.assigner.VantagePoints(key, k) {
				require.Equal(t, next[p.Shard], p.Zone, "%s: zone of %s", key, p.Shard)
			}
		}
		zones = next
	}

	// An update that changes no zone (another label) publishes nothing.
	l := leases["zc-p1"]
	l.Labels["unrelated"] = "x"
	require.NoError(t, direct.Update(context.Background(), l))
	rebalances = at.assigner.Rebalances()
	assert.Never(t, func() bool { return at.assigner.Rebalances() != rebalances || at.notified.count() > 0 },
		500*time.Millisecond, tick, "a label other than the zone moved checkers")
	assert.Equal(t, members, at.assigner.Members(), "members after the zone changes")
}
