package e2e_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/e2e/framework"
)

// isolation cuts a replica off from the ring and brings it back.
type isolation struct {
	name string
	// prepare runs before the replica id starts (as e.g. a proxy in
	// front of its API server must).
	prepare func(e *shardingEnv, id string)
	// cut and restore are given the replica's process.
	cut, restore func(m *framework.Manager) error
}

// TestIsolatedReplica cuts one of two replicas off for longer than its
// Lease, then brings it back, in two ways:
//   - frozen: SIGSTOP, then SIGCONT, as a paused VM or a process starved of
//     CPU. It runs again with the ring it knew, which still gives it its
//     checkers, every turn of them overdue, before its fencing timer fires.
//   - partitioned: its connections to the API server cut by a proxy, then
//     let through again. It fences itself, its watches fail and back off,
//     and its renewal may go through before its caches are current again.
//
// Either way the other replica takes the isolated one's checkers over as
// from a crash; the isolated one neither probes nor writes any of them
// before it has renewed its Lease, then takes its share back as a joining
// replica does, and no checker goes unprobed for longer than the crash
// promise (interval + lease duration + 2 s) through it all.
//
// Who probed is read from the User-Agent of the requests the target
// receives, who wrote from status.shard, as in TestSharding.
func TestIsolatedReplica(t *testing.T) {
	for _, tc := range []isolation{
		{
			name:    "frozen",
			prepare: func(*shardingEnv, string) {},
			cut:     (*framework.Manager).Freeze,
			restore: (*framework.Manager).Thaw,
		},
		func() isolation {
			var proxy *framework.Proxy
			return isolation{
				name: "partitioned",
				prepare: func(e *shardingEnv, id string) {
					proxy, e.kubeconfigs[id] = framework.ProxiedKubeconfig(e.t, cp.KubeconfigPath)
				},
				cut:     func(*framework.Manager) error { proxy.Cut(); return nil },
				restore: func(*framework.Manager) error { proxy.Restore(); return nil },
			}
		}(),
	} {
		t.Run(tc.name, func(t *testing.T) { testIsolatedReplica(t, tc) })
	}
}

func testIsolatedReplica(t *testing.T, how isolation) {
	e := newShardingEnv(t)
	isolated := "replica-b"

	e.phase("start two replicas")
	how.prepare(e, isolated)
	for _, id := range []string{"replica-a", isolated} {
		e.startReplica(id)
	}
	e.waitRingAgreed(e.live, 30*time.Second)

	e.phase(fmt.Sprintf("create %d WebCheckers", shardingCheckers))
	lastCreated := e.createCheckers()
	_, ok := e.waitAllReady(lastCreated, allReadyWithin)
	require.True(t, ok, "not all %d WebCheckers Ready within %s of the last creation: %s", shardingCheckers, allReadyWithin, e.notReadySummary())
	e.checkSteadyProbing("initial")

	e.phase("cut " + isolated + " off")
	both := slices.Clone(e.live)
	tCut := time.Now()
	require.NoError(t, how.cut(e.managers[isolated]))
	e.memberGone(isolated, tCut, tCut.Add(shardingLeaseDuration))
	took := e.handOver(both, tCut, crashTakeoverWithin, 30*time.Second)
	t.Logf("MEASURED takeover from the %s replica: first probe %s, status.shard %s after the cut (probe limit %s)",
		how.name, took.probed.Round(time.Millisecond), took.shown.Round(time.Millisecond), crashTakeoverWithin)

	// Long enough for the failing watches of a partitioned replica to
	// have backed off several times (client-go's reflectors wait 0.8 s,
	// doubling up to 30 s).
	time.Sleep(time.Until(tCut.Add(isolatedFor)))

	e.phase("bring " + isolated + " back")
	tBack := time.Now()
	require.NoError(t, how.restore(e.managers[isolated]))
	delete(e.dead, isolated)
	// A renewal may begin while the replica is cut off, its request
	// retried until it goes through: then nothing is checked here.
	renewed, seen := e.waitRenewedSince(isolated, tCut, 15*time.Second)
	t.Logf("MEASURED the %s replica's renewed Lease seen %s after it was back (cut off for %s)",
		how.name, seen.Sub(tBack).Round(time.Millisecond), tBack.Sub(tCut).Round(time.Millisecond))
	e.checkQuietUntil(isolated, tBack, renewed)

	alone := slices.Clone(e.live)
	e.live = sortedWith(e.live, isolated)
	settled := e.waitRingAgreed(e.live, 30*time.Second)
	if settled.IsZero() {
		settled = time.Now()
	}
	e.changes = append(e.changes, membershipChange{what: isolated + " back", start: tBack, settled: settled, before: alone, after: slices.Clone(e.live)})
	// From the start of the renewal: the replica may write (and the
	// others see it) before the renewed Lease was seen here.
	back := e.handOver(alone, renewed, crashTakeoverWithin, 30*time.Second)
	t.Logf("MEASURED hand-back to the %s replica: every replica saw it back %s after its renewal began; first probe %s, status.shard %s after that",
		how.name, settled.Sub(renewed).Round(time.Millisecond), back.probed.Round(time.Millisecond), back.shown.Round(time.Millisecond))
	e.checkSteadyProbing("after it came back")
	e.checkProbeGaps(time.Now())

	e.phase("stop every replica")
	for _, id := range e.started {
		require.NoError(t, e.managers[id].Terminate(20*time.Second), "%s did not exit cleanly after SIGTERM\n%s", id, tail(e.managers[id].Log(), 40))
	}
}

// waitRenewedSince waits up to within for the Lease of replica id to say
// it was renewed after since, and returns when that renewal began (its
// renewTime) and when it was seen.
func (e *shardingEnv) waitRenewedSince(id string, since time.Time, within time.Duration) (renewed, seen time.Time) {
	e.t.Helper()
	ok := poll(within, 20*time.Millisecond, func() bool {
		var l coordinationv1.Lease
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.leaseNS, Name: id}, &l); err != nil || l.Spec.RenewTime == nil {
			return false
		}
		renewed, seen = l.Spec.RenewTime.Time, time.Now()
		return renewed.After(since)
	})
	require.True(e.t, ok, "the Lease of %s was not renewed within %s", id, within)
	return renewed, seen
}

// isolatedFor is how long TestIsolatedReplica keeps a replica cut off.
const isolatedFor = 20 * time.Second

// inFlightWhenCut bounds the probes of an isolated replica that may reach
// the target after it is back although started before it was cut off,
// while it owned their checkers: a probe frozen between its connection and
// its request. The replica has well under one probe in flight on average
// here (its 500 checkers every 4 s, about a millisecond each).
const inFlightWhenCut = 4

// checkQuietUntil checks that replica id wrote the status of no checker
// between from and until, and probed none but those it may have had in
// flight before (inFlightWhenCut).
func (e *shardingEnv) checkQuietUntil(id string, from, until time.Time) {
	e.t.Helper()
	until = later(from, until)
	e.hits.sync()
	var probed, written []string
	for _, name := range e.names {
		for _, h := range e.hits.between(e.pathOf[name], from, until) {
			if h.shard == id {
				probed = append(probed, fmt.Sprintf("%s at +%s", name, h.at.Sub(from).Round(time.Millisecond)))
			}
		}
	}
	for _, ev := range e.rec.Snapshot() {
		if ev.Shard == id && !ev.At.Before(from) && ev.At.Before(until) {
			written = append(written, fmt.Sprintf("%s rv=%s at +%s", ev.Name, ev.RV, ev.At.Sub(from).Round(time.Millisecond)))
		}
	}
	assert.LessOrEqual(e.t, len(probed), inFlightWhenCut, "checkers probed by %s in the %s before it renewed its Lease: %v", id, until.Sub(from).Round(time.Millisecond), probed)
	e.t.Logf("MEASURED %s probed %d checkers and wrote %d statuses in the %s from when it was back until its renewal began",
		id, len(probed), len(written), until.Sub(from).Round(time.Millisecond))
	assert.Empty(e.t, written, "statuses written by %s in the %s before it renewed its Lease", id, until.Sub(from).Round(time.Millisecond))
}
