package e2e_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Settings of TestSharding. The limits below are the acceptance criteria of
// the sharding feature; they are derived from these settings.
const (
	shardingNamespace      = "e2e-sharding"
	shardingLeaseNamespace = "e2e-sharding-leases"
	shardingCheckers       = 1000
	shardingInterval       = 4 * time.Second
	shardingTimeout        = 2 * time.Second
	shardingLeaseDuration  = 5 * time.Second
	shardingRenewInterval  = time.Second
	shardingVirtualNodes   = 100
	// shardingKubeAPIQPS is each replica's --kube-api-qps (the default):
	// it bounds how fast status.shard follows a hand-over.
	shardingKubeAPIQPS = 100

	// allReadyWithin: every checker Ready, from the last creation.
	allReadyWithin = 15 * time.Second
	// crashTakeoverWithin: a kill -9'd replica's checkers probed by a
	// survivor, from the kill. Their status.shard follows within the
	// survivors' write budget (see shardWriteBudget).
	crashTakeoverWithin = shardingLeaseDuration + shardingInterval + 2*time.Second
	// shardingHandOverLead is each replica's --handover-lead: how long
	// it goes on probing after SIGTERM, until the instant it announced.
	shardingHandOverLead = 2 * time.Second
	// gracefulTakeoverWithin: the same after SIGTERM, from the instant
	// the replica announced it leaves.
	gracefulTakeoverWithin = shardingInterval + 2*time.Second
	// leaseReleasedWithin: the Lease of a SIGTERM'd replica is gone, from
	// that instant.
	leaseReleasedWithin = 2 * time.Second
	// maxProbeGap: no checker goes unprobed longer than this, ever.
	maxProbeGap = shardingInterval + shardingLeaseDuration + 2*time.Second
	// changeGrace: after a membership change settled, either the old or the
	// new owner may write a checker's status for this long.
	changeGrace = shardingLeaseDuration + 2*time.Second
	// deadWriteSlack: a write received this long after its writer was
	// killed or terminated is a write by a dead replica.
	deadWriteSlack = time.Second
)

// TestSharding runs several manager processes against one control plane and
// checks that they split the WebCheckers with the consistent-hash ring, that
// each checker is probed and written by exactly its owner, and that a
// crashed, a stopped and a new replica hand checkers over in time and
// without moving checkers between the replicas that stay.
//
// Who probed is read from the User-Agent of the requests the target
// receives ("webchecker (shard <id>)"), who wrote from status.shard in a
// watch on the WebCheckers that runs for the whole test.
func TestSharding(t *testing.T) {
	testStart := time.Now()
	e := newShardingEnv(t)

	// ---------------------------------------------------------------
	e.phase("start three replicas")
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		e.startReplica(id)
	}
	agreed := e.waitRingAgreed(e.live, 30*time.Second)
	t.Logf("all three replicas see ring %v (%s after the first start)", e.live, agreed.Sub(testStart).Round(time.Millisecond))
	require.ElementsMatch(t, e.live, e.liveLeaseHolders(), "live Leases of ring %s", e.ringName)

	// ---------------------------------------------------------------
	e.phase(fmt.Sprintf("create %d WebCheckers", shardingCheckers))
	lastCreated := e.createCheckers()
	t.Logf("created %d WebCheckers in %s", shardingCheckers, lastCreated.Sub(e.phaseStart).Round(time.Millisecond))

	allReady, ok := e.waitAllReady(lastCreated, allReadyWithin)
	require.True(t, ok, "not all %d WebCheckers Ready within %s of the last creation: %s", shardingCheckers, allReadyWithin, e.notReadySummary())
	t.Logf("MEASURED time to all-Ready: %s after the last creation (limit %s)", allReady.Sub(lastCreated).Round(time.Millisecond), allReadyWithin)

	counts := e.checkAssignment("initial")
	share := shardingCheckers / len(e.live)
	for _, id := range e.live {
		assert.GreaterOrEqual(t, counts[id], share*7/10, "replica %s owns too few checkers", id)
		assert.LessOrEqual(t, counts[id], share*13/10, "replica %s owns too many checkers", id)
	}
	t.Logf("MEASURED per-replica counts (status.shard = ring owner): %v", counts)
	e.checkSteadyProbing("initial")

	// ---------------------------------------------------------------
	e.phase("kill -9 replica-c")
	e.waitGraceOver()
	crashed := "replica-c"
	before := slices.Clone(e.live)
	tKill := time.Now()
	require.NoError(t, e.managers[crashed].Kill())
	// The Lease was renewed at most at tKill, so it expires at the latest
	// one lease duration later: then the survivors drop the replica.
	e.memberGone(crashed, tKill, tKill.Add(shardingLeaseDuration))
	crashTakeover := e.handOver(before, tKill, crashTakeoverWithin, 30*time.Second)
	if agreed := e.waitRingAgreed(e.live, 10*time.Second); !agreed.IsZero() {
		t.Logf("survivors dropped %s from the ring %s after the kill (lease duration %s)", crashed, agreed.Sub(tKill).Round(time.Millisecond), shardingLeaseDuration)
	}
	t.Logf("MEASURED crash takeover max: first probe %s, status.shard %s after kill -9 (probe limit %s)", crashTakeover.probed.Round(time.Millisecond), crashTakeover.shown.Round(time.Millisecond), crashTakeoverWithin)
	require.ElementsMatch(t, e.live, e.liveLeaseHolders(), "live Leases after the crash")
	e.checkAssignment("after crash")
	e.checkSteadyProbing("after crash")

	// ---------------------------------------------------------------
	e.phase("SIGTERM replica-b")
	e.waitGraceOver()
	stopped := "replica-b"
	before = slices.Clone(e.live)
	type exit struct {
		err error
		at  time.Time
	}
	terminated := make(chan exit, 1)
	tTerm := time.Now()
	go func() {
		err := e.managers[stopped].Terminate(20 * time.Second)
		terminated <- exit{err, time.Now()}
	}()
	// The replica announces on its Lease that it leaves the lead after
	// the signal, probes until then, and the others take over then, on
	// their own timers, before its Lease is gone.
	leaving := e.waitLeaving(stopped, tTerm, 5*time.Second)
	t.Logf("MEASURED leaving announced: Lease %s/%s says %s leaves %s after SIGTERM (lead %s)", e.leaseNS, stopped, stopped, leaving.Sub(tTerm).Round(time.Millisecond), shardingHandOverLead)
	e.memberGone(stopped, leaving, leaving.Add(time.Second))
	leaseGone, gone := e.waitLeaseGone(stopped, time.Until(leaving.Add(leaseReleasedWithin)))
	if gone {
		t.Logf("MEASURED lease deletion: Lease %s/%s NotFound %s after it left (limit %s)", e.leaseNS, stopped, leaseGone.Sub(leaving).Round(time.Millisecond), leaseReleasedWithin)
	}
	assert.True(t, gone, "the Lease of %s still exists %s after it left", stopped, leaseReleasedWithin)
	gracefulTakeover := e.handOver(before, leaving, gracefulTakeoverWithin, 30*time.Second)
	t.Logf("MEASURED graceful takeover max: first probe %s, status.shard %s after the replica left (probe limit %s)", gracefulTakeover.probed.Round(time.Millisecond), gracefulTakeover.shown.Round(time.Millisecond), gracefulTakeoverWithin)
	select {
	case x := <-terminated:
		require.NoError(t, x.err, "%s did not exit cleanly after SIGTERM\n%s", stopped, tail(e.managers[stopped].Log(), 40))
		t.Logf("%s exited %s after SIGTERM", stopped, x.at.Sub(tTerm).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		require.Fail(t, "Terminate did not return", stopped)
	}
	require.ElementsMatch(t, e.live, e.liveLeaseHolders(), "live Leases after SIGTERM")
	e.checkAssignment("after SIGTERM")
	e.checkSteadyProbing("after SIGTERM") // lasts past tTerm + 2 intervals
	e.checkProbedOnce("SIGTERM", before, stopped, tTerm.Add(-shardingInterval), tTerm.Add(2*shardingInterval))

	// ---------------------------------------------------------------
	// With one replica left the first join can only move checkers away
	// from it; the second join also checks that nothing moves between the
	// two replicas that were already there.
	for _, joiner := range []string{"replica-d", "replica-e"} {
		e.phase("start " + joiner)
		e.waitGraceOver()
		e.scaleOut(joiner)
		e.checkAssignment("after " + joiner + " joined")
		e.checkSteadyProbing("after " + joiner + " joined")
	}

	// ---------------------------------------------------------------
	e.phase("whole-test invariants")
	e.waitGraceOver()
	end := time.Now()
	e.rec.Stop()
	e.checkProbeGaps(end)
	e.checkStatusWriters(end)
	e.checkReadyNeverLost(allReady, end)

	// ---------------------------------------------------------------
	e.phase("stop every replica")
	for _, id := range e.started {
		m := e.managers[id]
		if !m.Exited() {
			require.NoError(t, m.Terminate(20*time.Second), "%s did not exit cleanly after SIGTERM\n%s", id, tail(m.Log(), 40))
		}
	}
	for _, id := range e.started {
		assert.True(t, e.managers[id].Exited(), "manager %s is still running", id)
	}
	e.hits.sync()
	probes := e.hits.total
	time.Sleep(shardingInterval + time.Second)
	e.hits.sync()
	assert.Equal(t, probes, e.hits.total, "the target was probed after every manager exited")
	holders := e.liveLeaseHolders()
	assert.Empty(t, holders, "live Leases after every replica stopped")
	t.Logf("MEASURED test duration: %s (%d probes recorded)", time.Since(testStart).Round(time.Second), e.hits.total)
}
