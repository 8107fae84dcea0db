package controllers_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// quorumRing is the ring of the quorum tests' replicas, which the test
// rearranges: its vantage points, the owner first, probe every checker of
// one namespace.
type quorumRing struct {
	namespace string
	mu        sync.Mutex
	set       []controllers.VantagePoint
}

func (r *quorumRing) setTo(set ...controllers.VantagePoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.set = set
}

func (r *quorumRing) vantagePoints(key types.NamespacedName, k int) []controllers.VantagePoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	if key.Namespace != r.namespace {
		return nil
	}
	return slices.Clone(r.set[:min(k, len(r.set))])
}

// quorumReplica is one replica on a quorumRing, reconciled by hand with
// outcomes the test sets.
type quorumReplica struct {
	shard string
	ring  *quorumRing
	held  *heldOutcomes
	r     *controllers.WebCheckerReconciler
}

func (q *quorumReplica) ShardID() string { return q.shard }
func (q *quorumReplica) Paused() bool    { return false }
func (q *quorumReplica) Owns(key types.NamespacedName) bool {
	set := q.ring.vantagePoints(key, 1)
	return len(set) > 0 && set[0].Shard == q.shard
}
func (q *quorumReplica) Probes(key types.NamespacedName, k int) bool {
	return slices.ContainsFunc(q.ring.vantagePoints(key, k), func(vp controllers.VantagePoint) bool { return vp.Shard == q.shard })
}
func (q *quorumReplica) VantagePoints(key types.NamespacedName, k int) []controllers.VantagePoint {
	return q.ring.vantagePoints(key, k)
}

func newQuorumReplica(t *testing.T, ctx context.Context, ring *quorumRing, shard string) *quorumReplica {
	q := &quorumReplica{shard: shard, ring: ring, held: &heldOutcomes{latest: map[types.NamespacedName]scheduler.Outcome{}}}
	q.r = &controllers.WebCheckerReconciler{
		Client: k8sClient, Scheduler: q.held, Ownership: q, Recorder: events.NewFakeRecorder(100),
		Trigger: controllers.NewTrigger(1),
	}
	return q
}

// probe makes success (or an EgressDenied failure) the replica's newest
// outcome of wc and reconciles it.
func (q *quorumReplica) probe(t *testing.T, wc *webcheckerv1alpha1.WebChecker, success bool) {
	t.Helper()
	key := client.ObjectKeyFromObject(wc)
	res := probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}
	if !success {
		res = probing.Result{Reason: probing.ReasonEgressDenied, Message: "127.0.0.2 is in a denied range"}
	}
	q.held.probed(scheduler.Outcome{Key: key, Generation: wc.Generation, Time: time.Now(), Result: res})
	q.reconcile(t, key)
}

func (q *quorumReplica) reconcile(t *testing.T, key types.NamespacedName) {
	t.Helper()
	// A write may conflict with another replica's: the controller retries.
	require.Eventually(t, func() bool {
		res, err := q.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
		require.NoError(t, err)
		return res.RequeueAfter == 0
	}, 5*time.Second, 20*time.Millisecond)
}

// TestQuorumFollowsTheMajority runs three replicas in zones a, b and c that
// probe one checker with vantagePoints 3: each writes its own entry, with a
// field manager of its own; the owner writes Ready from the majority,
// removes the entry of a replica that left, says when too few replicas
// are live, and writes nothing while nothing changes.
func TestQuorumFollowsTheMajority(t *testing.T) {
	t.Parallel()
	ring, replicas, wc := startQuorum(t)
	key := client.ObjectKeyFromObject(wc)
	a, b, d := quorumPoints["shard-a"], quorumPoints["shard-b"], quorumPoints["shard-d"]

	// c cannot reach the target; a and b can. The owner (a) reports last.
	replicas["shard-c"].probe(t, wc, false)
	replicas["shard-b"].probe(t, wc, true)
	replicas["shard-a"].probe(t, wc, true)
	got := getChecker(t, key)
	ready := meta.FindStatusCondition(got.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, "2 of 3 vantage points succeed (zone-a, zone-b)", ready.Message)
	assert.Equal(t, "2/3", got.Status.Quorum)
	assert.Equal(t, "shard-a", got.Status.Shard)
	require.Len(t, got.Status.VantagePoints, 3)
	entryC := entryOf(t, got, "shard-c")
	assert.Equal(t, metav1.ConditionFalse, entryC.Ready)
	assert.Equal(t, string(probing.ReasonEgressDenied), entryC.Reason)
	assert.Equal(t, "zone-c", entryC.Zone)
	assertEntriesOwnedByTheirShards(t, got)

	// Steady: probes with the same results write nothing.
	rv := got.ResourceVersion
	for shard, up := range map[string]bool{"shard-a": true, "shard-b": true, "shard-c": false} {
		replicas[shard].probe(t, wc, up)
	}
	assert.Equal(t, rv, getChecker(t, key).ResourceVersion, "nothing changed, nothing written")

	// b fails too: a majority fails, with the most common reason.
	quorumFlips(t, ring, replicas, wc, a, b, d)
}

// quorumPoints are the vantage points of TestQuorumFollowsTheMajority: a,
// b and c probe the checker at first, d (in c's zone) replaces c later.
var quorumPoints = map[string]controllers.VantagePoint{
	"shard-a": {Shard: "shard-a", Zone: "zone-a"}, "shard-b": {Shard: "shard-b", Zone: "zone-b"},
	"shard-c": {Shard: "shard-c", Zone: "zone-c"}, "shard-d": {Shard: "shard-d", Zone: "zone-c"},
}

// startQuorum creates a checker with three vantage points, probed by
// replicas a, b and c of a ring of its own.
func startQuorum(t *testing.T) (*quorumRing, map[string]*quorumReplica, *webcheckerv1alpha1.WebChecker) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := newElsewhereNamespace(t)
	ring := &quorumRing{namespace: ns}
	ring.setTo(quorumPoints["shard-a"], quorumPoints["shard-b"], quorumPoints["shard-c"])
	replicas := map[string]*quorumReplica{}
	for shard := range quorumPoints {
		replicas[shard] = newQuorumReplica(t, ctx, ring, shard)
	}
	wc := newChecker(ns, "quorum", "http://127.0.0.2:8080", "/")
	wc.Spec.VantagePoints = ptr.To[int32](3)
	require.NoError(t, k8sClient.Create(ctx, wc))
	return ring, replicas, wc
}

// quorumFlips goes on from a checker Ready True with 2 of 3 (c failing):
// b fails too, c is replaced by d, a stays alone, and the checker goes back
// to one vantage point.
func quorumFlips(t *testing.T, ring *quorumRing, replicas map[string]*quorumReplica, wc *webcheckerv1alpha1.WebChecker, a, b, d controllers.VantagePoint) {
	key := client.ObjectKeyFromObject(wc)
	ctx := context.Background()
	replicas["shard-b"].probe(t, wc, false)
	replicas["shard-a"].reconcile(t, key)
	got := getChecker(t, key)
	ready := meta.FindStatusCondition(got.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, string(probing.ReasonEgressDenied), ready.Reason)
	assert.True(t, strings.HasPrefix(ready.Message, "2 of 3 vantage points fail (zone-b: EgressDenied, zone-c: EgressDenied)"), ready.Message)
	assert.Equal(t, "1/3", got.Status.Quorum)

	// c leaves, d joins: the owner removes c's entry; d has not reported,
	// a succeeds and b fails, so there is no majority and Ready stays.
	ring.setTo(a, b, d)
	// The owner first holds its write back, waiting for the newcomer.
	res, err := replicas["shard-a"].r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter, "the owner waits for the newcomer before it writes the quorum")
	assert.NotNil(t, findEntry(getChecker(t, key), "shard-c"), "held back")
	// Past the hold, it writes what it has.
	replicas["shard-a"].reconcile(t, key)
	got = getChecker(t, key)
	assert.Nil(t, findEntry(got, "shard-c"), "the owner removes the entry of a replica that left")
	ready = meta.FindStatusCondition(got.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status, "no majority: Ready keeps its value")
	assert.Contains(t, ready.Message, "No majority of 3 vantage points: 1 succeed, 1 fail, 1 have not reported")
	replicas["shard-d"].probe(t, wc, true)
	replicas["shard-a"].reconcile(t, key)
	got = getChecker(t, key)
	assert.Equal(t, metav1.ConditionTrue, meta.FindStatusCondition(got.Status.Conditions, webcheckerv1alpha1.ConditionReady).Status)
	assert.Equal(t, "2 of 3 vantage points succeed (zone-a, zone-c)", meta.FindStatusCondition(got.Status.Conditions, webcheckerv1alpha1.ConditionReady).Message)
	assertEntriesOwnedByTheirShards(t, got)

	// a alone is live: it probes the checker and says so.
	ring.setTo(a)
	replicas["shard-a"].reconcile(t, key)
	got = getChecker(t, key)
	available := meta.FindStatusCondition(got.Status.Conditions, controllers.ConditionVantagePointsAvailable)
	require.NotNil(t, available)
	assert.Equal(t, metav1.ConditionFalse, available.Status)
	assert.Equal(t, controllers.ReasonTooFewReplicas, available.Reason)
	assert.Equal(t, "1/1", got.Status.Quorum)
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, webcheckerv1alpha1.ConditionReady).Message, "3 vantage points requested, 1 replicas live")

	// Back to one vantage point: nothing of the quorum stays.
	got.Spec.VantagePoints = ptr.To[int32](1)
	require.NoError(t, k8sClient.Update(ctx, got))
	replicas["shard-a"].probe(t, got, true)
	got = getChecker(t, key)
	assert.Empty(t, got.Status.VantagePoints)
	assert.Empty(t, got.Status.Quorum)
	assert.Nil(t, meta.FindStatusCondition(got.Status.Conditions, controllers.ConditionVantagePointsAvailable))
}

func findEntry(wc *webcheckerv1alpha1.WebChecker, shard string) *webcheckerv1alpha1.VantagePointStatus {
	for i := range wc.Status.VantagePoints {
		if wc.Status.VantagePoints[i].Shard == shard {
			return &wc.Status.VantagePoints[i]
		}
	}
	return nil
}

func entryOf(t *testing.T, wc *webcheckerv1alpha1.WebChecker, shard string) webcheckerv1alpha1.VantagePointStatus {
	t.Helper()
	e := findEntry(wc, shard)
	require.NotNil(t, e, "entry of %s", shard)
	return *e
}

// assertEntriesOwnedByTheirShards checks, from managedFields, that every
// entry of status.vantagePoints is managed by its own shard's field
// manager alone.
func assertEntriesOwnedByTheirShards(t *testing.T, wc *webcheckerv1alpha1.WebChecker) {
	t.Helper()
	owners, err := framework.EntryManagers(wc)
	require.NoError(t, err)
	for _, e := range wc.Status.VantagePoints {
		assert.Equal(t, []string{controllers.VantageFieldManager(e.Shard)}, owners[e.Shard], "entry of %s", e.Shard)
	}
}
