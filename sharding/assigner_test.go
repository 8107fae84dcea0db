package sharding_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/sharding"
	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

// t0 is the fake clock's start. The API server stores renewTime as given,
// so Leases can be stamped with fake instants.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	leaseNamespace = "default"
	// alive is a Lease duration no test outlives on the fake clock.
	alive = time.Hour
	// within bounds every wait for the Assigner to react; it reacts in
	// milliseconds, the rest is headroom for a loaded machine.
	within = 10 * time.Second
	tick   = 20 * time.Millisecond
)

// fakeFencer is a Fencer the test switches.
type fakeFencer struct {
	mu       sync.Mutex
	fenced   bool
	since    time.Time
	fencings uint64
	changes  chan struct{}
}

func newFakeFencer() *fakeFencer { return &fakeFencer{changes: make(chan struct{}, 1)} }

func (f *fakeFencer) Fenced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fenced
}

func (f *fakeFencer) FencedSince() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.since
}

func (f *fakeFencer) Fencings() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fencings
}

func (f *fakeFencer) FencingChanges() <-chan struct{} { return f.changes }

// set fences the replica or lifts its fencing; a fencing set begins at the
// zero instant (see setAt).
func (f *fakeFencer) set(fenced bool) { f.setAt(fenced, time.Time{}) }

// setAt fences the replica from since on, or lifts its fencing.
func (f *fakeFencer) setAt(fenced bool, since time.Time) {
	f.mu.Lock()
	if fenced && !f.fenced {
		f.fencings++
	}
	f.fenced, f.since = fenced, time.Time{}
	if fenced {
		f.since = since
	}
	f.mu.Unlock()
	select {
	case f.changes <- struct{}{}:
	default:
	}
}

// notifications records the changes an Assigner notifies.
type notifications struct {
	mu      sync.Mutex
	keys    []types.NamespacedName
	changes []sharding.Change
}

func (n *notifications) notify(_ context.Context, c sharding.Change) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.keys = append(n.keys, c.Key)
	n.changes = append(n.changes, c)
}

func (n *notifications) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.keys)
}

// await waits until as many keys as want have been notified since the last
// await, checks that they are want, in any order, each gained (owned) or
// lost (!owned), none regrouped, and returns their changes.
func (n *notifications) await(t *testing.T, want []types.NamespacedName, owned bool) []sharding.Change {
	t.Helper()
	require.Eventually(t, func() bool { return n.count() >= len(want) }, within, tick, "notified %d keys, want %d", n.count(), len(want))
	n.mu.Lock()
	defer n.mu.Unlock()
	assert.ElementsMatch(t, want, n.keys)
	changes := n.changes
	for _, c := range changes {
		assert.Equal(t, owned, c.Probes, "%s notified with Probes=%t", c.Key, c.Probes)
		assert.False(t, c.Regrouped, "%s notified regrouped", c.Key)
	}
	n.keys, n.changes = nil, nil
	return changes
}

// testKeys are the checkers of every Assigner test: Keys is static.
var testKeys = func() []types.NamespacedName {
	keys := make([]types.NamespacedName, 40)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("checker-%d", i)}
	}
	return keys
}()

// ownedBy returns the test keys that id owns in a ring of members.
func ownedBy(id string, members ...string) []types.NamespacedName {
	r := ring.New(members, 0)
	var owned []types.NamespacedName
	for _, k := range testKeys {
		if r.Owner(ring.Key(k.Namespace, k.Name)) == id {
			owned = append(owned, k)
		}
	}
	return owned
}

// assignerTest is one Assigner running against the API server on a fake
// clock, with its own cache restricted to its ring.
type assignerTest struct {
	assigner *sharding.Assigner
	clock    *clocktesting.FakeClock
	fencer   *fakeFencer
	notified *notifications
	// direct reaches the API server without a cache.
	direct client.Client
}

func newDirectClient(t *testing.T) client.Client {
	t.Helper()
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	direct, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return direct
}

// startAssigner starts an Assigner for id on ringName once the Leases the
// test created are in place, its checkers the test keys with one vantage
// point each. collect sets its Deleter; options change its options last.
func startAssigner(t *testing.T, direct client.Client, id, ringName string, collect bool, options ...func(*sharding.AssignerOptions)) *assignerTest {
	t.Helper()
	c, err := cache.New(cp.Config, cache.Options{
		Scheme: direct.Scheme(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: sharding.LeaseCacheOptions(leaseNamespace, ringName),
		},
	})
	require.NoError(t, err)
	at := &assignerTest{clock: clocktesting.NewFakeClock(t0), fencer: newFakeFencer(), notified: &notifications{}, direct: direct}
	opts := sharding.AssignerOptions{
		ID:         id,
		Cache:      c,
		Namespace:  leaseNamespace,
		RingName:   ringName,
		Fencer:     at.fencer,
		Keys:       func(context.Context) ([]sharding.Checker, error) { return withVantagePoints(1, testKeys), nil },
		Notify:     at.notified.notify,
		StaleAfter: time.Minute,
		Clock:      at.clock,
		Logger:     testr.New(t),
	}
	if collect {
		opts.Deleter = direct
	}
	for _, o := range options {
		o(&opts)
	}
	at.assigner, err = sharding.NewAssigner(opts)
	require.NoError(t, err)
	framework.RunInTest(t, c)
	framework.RunInTest(t, at.assigner) // stops before the cache
	return at
}

// createLease creates the Lease of a ring member that last renewed it at
// renewed, for duration, and deletes it when the test ends.
func createLease(t *testing.T, direct client.Client, name, ringName string, renewed time.Time, duration time.Duration) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: name, Labels: map[string]string{membership.LabelRing: ringName}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To(int32(duration / time.Second)),
			RenewTime:            ptr.To(metav1.NewMicroTime(renewed)),
		},
	}
	require.NoError(t, direct.Create(context.Background(), l))
	t.Cleanup(func() { _ = client.IgnoreNotFound(direct.Delete(context.Background(), l)) })
	return l
}

// awaitMembers waits until the Assigner's ring has exactly members.
func (at *assignerTest) awaitMembers(t *testing.T, members ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(members, at.assigner.Members()) }, within, tick,
		"members %v, want %v", at.assigner.Members(), members)
}

// assertOwns checks that the Assigner owns exactly the test keys in owned.
func (at *assignerTest) assertOwns(t *testing.T, owned []types.NamespacedName) {
	t.Helper()
	want := map[types.NamespacedName]bool{}
	for _, k := range owned {
		want[k] = true
	}
	for _, k := range testKeys {
		assert.Equal(t, want[k], at.assigner.Owns(k), "Owns(%s)", k)
	}
}

// TestAssignerDropsExpiredMembers checks that a peer whose Lease is no
// longer renewed leaves the ring when the clock passes renewTime +
// leaseDuration, with no Lease event to announce it, and that this replica
// is notified of, and owns, the checkers it takes over.
func TestAssignerDropsExpiredMembers(t *testing.T) {
	const ringName, self, peer = "assigner-expiry", "expiry-self", "expiry-peer"
	const peerDuration = 10 * time.Second
	direct := newDirectClient(t)
	createLease(t, direct, self, ringName, t0, alive)
	createLease(t, direct, peer, ringName, t0, peerDuration)
	at := startAssigner(t, direct, self, ringName, false)

	for _, c := range at.notified.await(t, ownedBy(self, self, peer), true) {
		assert.Zero(t, c.UnprobedSince, "%s: owned by nobody before the start", c.Key)
	}
	at.awaitMembers(t, peer, self)
	at.assertOwns(t, ownedBy(self, self, peer))
	taken := ownedBy(peer, self, peer)
	require.NotEmpty(t, taken, "the peer owns no test key: the test would prove nothing")

	// Live until the last instant before expiry...
	at.clock.SetTime(t0.Add(peerDuration - time.Millisecond))
	assert.Never(t, func() bool { return len(at.assigner.Members()) != 2 }, 500*time.Millisecond, tick, "peer dropped before its lease expired")

	// ...and gone at renewTime + leaseDuration.
	at.clock.SetTime(t0.Add(peerDuration))
	at.awaitMembers(t, self)
	for _, c := range at.notified.await(t, taken, true) {
		// The peer may have died right after its renewal seen at t0,
		// which it wrote before.
		assert.True(t, c.UnprobedSince.Before(t0), "%s: unprobed since %v, not before the renewal seen at %v", c.Key, c.UnprobedSince, t0)
	}
	at.assertOwns(t, testKeys)
	assert.EqualValues(t, 2, at.assigner.Rebalances(), "rebalances: the first ring, then the peer's expiry")
}

// TestAssignerFencing checks that fencing, signalled through the Fencer's
// channel, takes every checker away at once and reports each as lost, and
// that lifting it gives them back.
func TestAssignerFencing(t *testing.T) {
	const ringName, self, peer = "assigner-fencing", "fencing-self", "fencing-peer"
	direct := newDirectClient(t)
	createLease(t, direct, self, ringName, t0, alive)
	createLease(t, direct, peer, ringName, t0, alive)
	at := startAssigner(t, direct, self, ringName, false)
	owned := ownedBy(self, self, peer)
	require.NotEmpty(t, owned)
	at.notified.await(t, owned, true)
	at.assertOwns(t, owned)
	rebalances := at.assigner.Rebalances()

	// Owns reads the Fencer itself: no re-evaluation needed.
	at.fencer.set(true)
	at.assertOwns(t, nil)
	at.notified.await(t, owned, false)
	fencedAt := at.clock.Now()

	at.clock.Step(3 * time.Second)
	at.fencer.set(false)
	for _, c := range at.notified.await(t, owned, true) {
		assert.Equal(t, fencedAt, c.UnprobedSince, "%s: unprobed since this replica fenced itself", c.Key)
	}
	at.assertOwns(t, owned)
	assert.Equal(t, rebalances, at.assigner.Rebalances(), "fencing is not a change of membership")
	assert.Equal(t, []string{peer, self}, at.assigner.Members())
}

// TestAssignerHoldsABriefFencingBack checks FenceSettle: a fencing stops
// Owns at once but is published as a ring change (every owned checker
// lost) only once it has lasted FenceSettle, and one that ends sooner
// moves nothing and is reported to Resume from its start; one that lasts
// is published, and gaining the checkers back after it counts from its
// start, not from its publication.
func TestAssignerHoldsABriefFencingBack(t *testing.T) {
	const ringName, self, peer = "assigner-settle", "settle-self", "settle-peer"
	const settle = 2 * time.Second
	direct := newDirectClient(t)
	createLease(t, direct, self, ringName, t0, alive)
	createLease(t, direct, peer, ringName, t0, alive)
	var (
		mu      sync.Mutex
		resumed []time.Time
	)
	at := startAssigner(t, direct, self, ringName, false, func(o *sharding.AssignerOptions) {
		o.FenceSettle = settle
		o.Resume = func(_ context.Context, since time.Time) {
			mu.Lock()
			defer mu.Unlock()
			resumed = append(resumed, since)
		}
	})
	resumes := func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(resumed)
	}
	owned := ownedBy(self, self, peer)
	require.NotEmpty(t, owned)
	at.notified.await(t, owned, true)
	ringChanged := at.assigner.RingChanged()

	// A brief fencing: nothing owned, nothing moved, then resumed.
	brief := at.clock.Now()
	at.fencer.setAt(true, brief)
	at.assertOwns(t, nil)
	assert.True(t, at.assigner.Paused())
	at.clock.Step(settle - time.Millisecond)
	assert.Never(t, func() bool { return at.notified.count() > 0 }, 300*time.Millisecond, tick, "a fencing shorter than FenceSettle moved checkers")
	at.fencer.set(false)
	require.Eventually(t, func() bool { return len(resumes()) == 1 }, within, tick, "a brief fencing was not resumed")
	assert.Equal(t, []time.Time{brief}, resumes(), "resumed from the fencing's start")
	at.assertOwns(t, owned)
	assert.False(t, at.assigner.Paused())
	assert.Zero(t, at.notified.count(), "a brief fencing moved checkers")
	assert.Equal(t, ringChanged, at.assigner.RingChanged(), "a brief fencing changed the ring")

	// A fencing that lasts: published once settled, not before.
	long := at.clock.Now()
	at.fencer.setAt(true, long)
	assert.Never(t, func() bool { return at.notified.count() > 0 }, 300*time.Millisecond, tick, "published before it settled")
	at.clock.Step(settle)
	at.notified.await(t, owned, false)
	assert.False(t, at.assigner.Paused(), "a published fencing is no pause")
	at.assertOwns(t, nil)
	at.clock.Step(3 * time.Second)
	at.fencer.set(false)
	for _, c := range at.notified.await(t, owned, true) {
		assert.Equal(t, long, c.UnprobedSince, "%s: unprobed since the fencing began", c.Key)
	}
	at.assertOwns(t, owned)
	assert.Len(t, resumes(), 1, "a published fencing is made up by its gains, not resumed")
}

// TestAssignerListsNoCheckerWhileFenced: a ring change while this replica
// stays fenced (a peer's Lease expires) moves nothing to or from it, so it
// lists no checker (a list of every checker at every such change is what
// a replica fenced on a starved API server spent its CPU on); once it is
// unfenced it gains every checker of the new ring.
func TestAssignerListsNoCheckerWhileFenced(t *testing.T) {
	const ringName, self, peer = "assigner-fenced-change", "fenced-change-self", "fenced-change-peer"
	const peerDuration = 10 * time.Second
	direct := newDirectClient(t)
	createLease(t, direct, self, ringName, t0, alive)
	createLease(t, direct, peer, ringName, t0, peerDuration)
	var listed atomic.Int32
	at := startAssigner(t, direct, self, ringName, false, func(o *sharding.AssignerOptions) {
		keys := o.Keys
		o.Keys = func(ctx context.Context) ([]sharding.Checker, error) {
			listed.Add(1)
			return keys(ctx)
		}
	})
	owned := ownedBy(self, self, peer)
	require.NotEmpty(t, owned)
	require.Less(t, len(owned), len(testKeys), "the peer owns no test key: the test would prove nothing")
	at.notified.await(t, owned, true)
	at.fencer.set(true)
	at.notified.await(t, owned, false)
	before := listed.Load()

	at.clock.SetTime(t0.Add(peerDuration))
	at.awaitMembers(t, self)
	assert.Equal(t, before, listed.Load(), "checkers listed for a ring change while fenced")

	at.fencer.set(false)
	at.notified.await(t, testKeys, true)
	at.assertOwns(t, testKeys)
	assert.Equal(t, before+1, listed.Load(), "checkers listed once, when unfenced")
}

// renew writes a renewal of l stamped renewTime, as its holder would on its
// own clock.
func renew(t *testing.T, direct client.Client, l *coordinationv1.Lease, renewTime time.Time) {
	t.Helper()
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renewTime))
	require.NoError(t, direct.Update(context.Background(), l))
}

// TestAssignerJudgesLeasesOnItsOwnClock checks that a peer's Lease is
// judged by when this replica observed it change, not by its renewTime: a
// crashed peer whose clock ran a minute ahead is taken over a lease
// duration after its Lease was observed, not a minute later.
func TestAssignerJudgesLeasesOnItsOwnClock(t *testing.T) {
	const ringName, self, peer = "assigner-clock-ahead", "ahead-self", "ahead-peer"
	const peerDuration = 10 * time.Second
	direct := newDirectClient(t)
	createLease(t, direct, self, ringName, t0, alive)
	createLease(t, direct, peer, ringName, t0.Add(time.Minute), peerDuration) // never renewed again
	at := startAssigner(t, direct, self, ringName, false)
	at.awaitMembers(t, peer, self) // observed at t0: the fake clock has not moved
	at.notified.await(t, ownedBy(self, self, peer), true)
	taken := ownedBy(peer, self, peer)
	require.NotEmpty(t, taken, "the peer owns no test key: the test would prove nothing")

	at.clock.SetTime(t0.Add(peerDuration - time.Millisecond))
	assert.Never(t, func() bool { return len(at.assigner.Members()) != 2 }, 500*time.Millisecond, tick, "peer dropped before a lease duration had passed")

	// Within leaseDuration + 1s of the observation, whatever its renewTime.
	at.clock.SetTime(t0.Add(peerDuration + time.Second))
	at.awaitMembers(t, self)
	at.notified.await(t, taken, true)
	at.assertOwns(t, testKeys)
}

// TestAssignerKeepsAPeerWhoseClockIsBehind checks that a peer that keeps
// renewing stays in the ring although every renewTime it writes is 30s in
// the past on this replica's clock (three lease durations), and that it
// leaves the ring a lease duration after its last renewal was observed.
func TestAssignerKeepsAPeerWhoseClockIsBehind(t *testing.T) {
	const ringName, self, peer = "assigner-clock-behind", "behind-self", "behind-peer"
	const peerDuration, renewEvery, skew = 10 * time.Second, 2 * time.Second, 30 * time.Second
	direct := newDirectClient(t)
	createLease(t, direct, self, ringName, t0, alive)
	peerLease := createLease(t, direct, peer, ringName, t0.Add(-skew), peerDuration)
	at := startAssigner(t, direct, self, ringName, false)
	at.awaitMembers(t, peer, self)

	now := t0
	for range 10 { // 20s of renewals: two lease durations
		now = now.Add(renewEvery)
		at.clock.SetTime(now)
		renew(t, direct, peerLease, now.Add(-skew))
		require.Equal(t, []string{peer, self}, at.assigner.Members(), "live peer dropped at %s", now)
	}
	assert.Never(t, func() bool { return len(at.assigner.Members()) != 2 }, 500*time.Millisecond, tick, "live peer dropped")
	assert.EqualValues(t, 1, at.assigner.Rebalances(), "the ring changed while the peer kept renewing")

	// It stops renewing: gone a lease duration after the last renewal,
	// observed at now at the latest.
	at.clock.SetTime(now.Add(peerDuration))
	at.awaitMembers(t, self)
}

// TestAssignerCollectsStaleLeases checks that a Lease is deleted only once
// it has been unchanged, on this replica's clock, for StaleAfter past its
// expiry, however old its renewTime; a released Lease (no holder) once it
// has been unchanged for StaleAfter; and that a Lease of another ring and
// a live one are kept.
func TestAssignerCollectsStaleLeases(t *testing.T) {
	const ringName, self = "assigner-stale", "stale-self"
	const duration, staleAfter = 10 * time.Second, time.Minute
	direct := newDirectClient(t)
	selfLease := createLease(t, direct, self, ringName, t0, alive)
	crashed := createLease(t, direct, "stale-crashed", ringName, t0.Add(-time.Hour), duration)
	released := createLease(t, direct, "stale-released", ringName, t0.Add(-time.Hour), duration)
	released.Spec.HolderIdentity = nil
	require.NoError(t, direct.Update(context.Background(), released))
	otherRing := createLease(t, direct, "stale-other-ring", "another-ring", t0.Add(-time.Hour), duration)
	at := startAssigner(t, direct, self, ringName, true)
	at.awaitMembers(t, crashed.Name, self)

	exists := func(l *coordinationv1.Lease) bool {
		err := direct.Get(context.Background(), client.ObjectKeyFromObject(l), &coordinationv1.Lease{})
		require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
		return err == nil
	}
	// An hour-old renewTime does not make a Lease stale when first seen.
	assert.Never(t, func() bool { return !exists(crashed) || !exists(released) }, 500*time.Millisecond, tick, "a lease deleted on first sight")

	// Past StaleAfter for the released one; the crashed one expired at
	// t0+10s, 51s ago. The crashed Lease's expiry evaluates.
	at.clock.SetTime(t0.Add(staleAfter + time.Second))
	require.Eventually(t, func() bool { return !exists(released) }, within, tick, "released lease not deleted")
	at.awaitMembers(t, self)
	assert.True(t, exists(crashed), "a lease expired for less than StaleAfter was deleted")

	// Past StaleAfter after the crashed one's expiry. No timer is due; the
	// renewal of this replica's own Lease makes the next evaluation.
	now := t0.Add(duration + staleAfter + time.Second)
	at.clock.SetTime(now)
	renew(t, direct, selfLease, now)
	require.Eventually(t, func() bool { return !exists(crashed) }, within, tick, "lease expired for longer than StaleAfter not deleted")
	assert.True(t, exists(otherRing), "a lease of another ring was deleted")
	assert.True(t, exists(selfLease), "a live lease was deleted")
}

// A member that released its Lease on shutdown, marked with when it
// stopped probing, is taken over from exactly then; without the mark, from
// shortly before its Lease was seen deleted. A release is forgotten once
// the member is back: if it leaves again unmarked, the mark of its
// previous departure does not count.
func TestAssignerTakesOverFromAReleasedLease(t *testing.T) {
	stoppedAt := t0.Add(3500 * time.Millisecond)
	now := t0.Add(5 * time.Second)
	tests := map[string]struct {
		marks []bool // the member's departures, in turn: marked or not
		want  time.Time
	}{
		"marked: from when it stopped probing": {marks: []bool{true}, want: stoppedAt},
		"unmarked: the hand-over slack":        {marks: []bool{false}, want: now.Add(-time.Second)},
		"back, then gone unmarked: the slack":  {marks: []bool{true, false}, want: now.Add(-time.Second)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ringName := "released-" + fmt.Sprint(len(tc.marks)) + fmt.Sprint(tc.marks[0])
			self, peer := ringName+"-self", ringName+"-peer"
			direct := newDirectClient(t)
			createLease(t, direct, self, ringName, t0, alive)
			at := startAssigner(t, direct, self, ringName, false)
			at.notified.await(t, testKeys, true)
			taken := ownedBy(peer, self, peer)
			require.NotEmpty(t, taken, "the peer owns no test key: the test would prove nothing")

			at.clock.SetTime(now)
			var changes []sharding.Change
			for _, marked := range tc.marks {
				l := createLease(t, direct, peer, ringName, t0, alive)
				at.awaitMembers(t, peer, self)
				at.notified.await(t, taken, false)
				if marked {
					l.Annotations = map[string]string{membership.AnnotationProbingStopped: stoppedAt.Format(time.RFC3339Nano)}
					require.NoError(t, direct.Update(context.Background(), l))
				}
				require.NoError(t, direct.Delete(context.Background(), l))
				at.awaitMembers(t, self)
				changes = at.notified.await(t, taken, true)
			}
			for _, c := range changes {
				assert.Equal(t, tc.want, c.UnprobedSince, "%s", c.Key)
				assert.Zero(t, c.Tolerance, "%s", c.Key)
			}
		})
	}
}

// TestAssignerTakesOverWhenAMemberLeaves checks that a peer that announces
// on its Lease when it leaves the ring (membership.AnnotationLeavingAt)
// stays a member until that instant and is dropped then, on this replica's
// timer, with no Lease event, its checkers taken over from that instant;
// and that an announcement seen after its instant drops the peer at once,
// from the instant too. Either way a turn of a checker taken over that
// was due before the instant stays the peer's (ProbesTurn), however late
// this replica's dispatcher reaches it, while its own checkers' turns stay
// its own.
func TestAssignerTakesOverWhenAMemberLeaves(t *testing.T) {
	leavesAt := t0.Add(5 * time.Second)
	tests := map[string]struct {
		seenAt time.Time // the clock when the announcement is written
	}{
		"announced before: dropped at the instant": {seenAt: t0},
		"seen after the instant: dropped at once":  {seenAt: leavesAt.Add(3 * time.Second)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ringName := "leaving-" + fmt.Sprint(tc.seenAt.Unix())
			self, peer := ringName+"-self", ringName+"-peer"
			direct := newDirectClient(t)
			createLease(t, direct, self, ringName, t0, alive)
			l := createLease(t, direct, peer, ringName, t0, alive)
			at := startAssigner(t, direct, self, ringName, false)
			at.notified.await(t, ownedBy(self, self, peer), true)
			at.awaitMembers(t, peer, self)
			taken := ownedBy(peer, self, peer)
			require.NotEmpty(t, taken, "the peer owns no test key: the test would prove nothing")

			at.clock.SetTime(tc.seenAt)
			l.Annotations = map[string]string{membership.AnnotationLeavingAt: leavesAt.Format(time.RFC3339Nano)}
			require.NoError(t, direct.Update(context.Background(), l))
			if tc.seenAt.Before(leavesAt) {
				assert.Never(t, func() bool { return len(at.assigner.Members()) != 2 }, 500*time.Millisecond, tick, "peer dropped when it announced, before its instant")
				at.clock.SetTime(leavesAt.Add(-time.Millisecond))
				assert.Never(t, func() bool { return len(at.assigner.Members()) != 2 }, 300*time.Millisecond, tick, "peer dropped before its instant")
				at.clock.SetTime(leavesAt)
			}
			at.awaitMembers(t, self)
			for _, c := range at.notified.await(t, taken, true) {
				assert.Equal(t, leavesAt, c.UnprobedSince, "%s: taken over from the instant announced", c.Key)
				assert.Zero(t, c.Tolerance, "%s", c.Key)
			}
			at.assertOwns(t, testKeys)
			require.NotEmpty(t, ownedBy(self, self, peer), "this replica owned no test key: the test would prove nothing")
			for _, k := range testKeys {
				wasPeers := slices.Contains(taken, k)
				assert.Equal(t, !wasPeers, at.assigner.ProbesTurn(k, 1, leavesAt.Add(-time.Nanosecond)), "%s: turn due right before the instant", k)
				assert.True(t, at.assigner.ProbesTurn(k, 1, leavesAt), "%s: turn due at the instant", k)
			}
		})
	}
}
