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
)

// TestFrozenReplica freezes one of two replicas with SIGSTOP for longer
// than its Lease, as a paused VM or a process starved of CPU, then thaws
// it with SIGCONT. The other replica takes the frozen one's checkers over
// as from a crash. The thawed replica runs again with the ring it knew,
// which still gives it its checkers, and with every one of their turns
// overdue: it must neither probe nor write any of them before it has
// renewed its Lease (its fencing deadline passed while it was frozen),
// and must then take its share back as a joining replica does, no checker
// going unprobed for longer than the crash promise.
//
// Who probed is read from the User-Agent of the requests the target
// receives, who wrote from status.shard, as in TestSharding.
func TestFrozenReplica(t *testing.T) {
	e := newShardingEnv(t)

	e.phase("start two replicas")
	for _, id := range []string{"replica-a", "replica-b"} {
		e.startReplica(id)
	}
	e.waitRingAgreed(e.live, 30*time.Second)

	e.phase(fmt.Sprintf("create %d WebCheckers", shardingCheckers))
	lastCreated := e.createCheckers()
	_, ok := e.waitAllReady(lastCreated, allReadyWithin)
	require.True(t, ok, "not all %d WebCheckers Ready within %s of the last creation: %s", shardingCheckers, allReadyWithin, e.notReadySummary())
	e.checkSteadyProbing("initial")

	e.phase("freeze replica-b")
	frozen := "replica-b"
	both := slices.Clone(e.live)
	tStop := time.Now()
	require.NoError(t, e.managers[frozen].Freeze())
	e.memberGone(frozen, tStop, tStop.Add(shardingLeaseDuration))
	took := e.handOver(both, tStop, crashTakeoverWithin, 30*time.Second)
	t.Logf("MEASURED takeover from the frozen replica: first probe %s, status.shard %s after SIGSTOP (probe limit %s)",
		took.probed.Round(time.Millisecond), took.shown.Round(time.Millisecond), crashTakeoverWithin)

	e.phase("thaw replica-b")
	tThaw := time.Now()
	require.NoError(t, e.managers[frozen].Thaw())
	delete(e.dead, frozen)
	renewed := e.waitRenewedSince(frozen, tStop, 10*time.Second)
	t.Logf("MEASURED the thawed replica renewed its Lease %s after SIGCONT (frozen %s)",
		renewed.Sub(tThaw).Round(time.Millisecond), tThaw.Sub(tStop).Round(time.Millisecond))
	e.checkQuietUntil(frozen, tThaw, renewed)

	alone := slices.Clone(e.live)
	e.live = sortedWith(e.live, frozen)
	settled := e.waitRingAgreed(e.live, 30*time.Second)
	if settled.IsZero() {
		settled = time.Now()
	}
	e.changes = append(e.changes, membershipChange{what: frozen + " thawed", start: tThaw, settled: settled, before: alone, after: slices.Clone(e.live)})
	back := e.handOver(alone, renewed, crashTakeoverWithin, 30*time.Second)
	t.Logf("MEASURED hand-back to the thawed replica: first probe %s, status.shard %s after its renewal",
		back.probed.Round(time.Millisecond), back.shown.Round(time.Millisecond))
	e.checkSteadyProbing("after the thaw")
	e.checkProbeGaps(time.Now())

	e.phase("stop every replica")
	for _, id := range e.started {
		require.NoError(t, e.managers[id].Terminate(20*time.Second), "%s did not exit cleanly after SIGTERM\n%s", id, tail(e.managers[id].Log(), 40))
	}
}

// waitRenewedSince waits up to within for the Lease of replica id to say
// it was renewed after since, and returns that renewal's start.
func (e *shardingEnv) waitRenewedSince(id string, since time.Time, within time.Duration) time.Time {
	e.t.Helper()
	var at time.Time
	ok := poll(within, 20*time.Millisecond, func() bool {
		var l coordinationv1.Lease
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.leaseNS, Name: id}, &l); err != nil || l.Spec.RenewTime == nil {
			return false
		}
		at = l.Spec.RenewTime.Time
		return at.After(since)
	})
	require.True(e.t, ok, "the Lease of %s was not renewed within %s", id, within)
	return at
}

// inFlightAtFreeze bounds the probes of the frozen replica that may reach
// the target after SIGCONT although started before SIGSTOP, while the
// replica owned their checkers: a probe stopped between its connection and
// its request. The replica has well under one probe in flight on average
// here (its 500 checkers every 4 s, about a millisecond each).
const inFlightAtFreeze = 4

// checkQuietUntil checks that replica id wrote the status of no checker
// between from and until, and probed none but those it may have had in
// flight before (inFlightAtFreeze).
func (e *shardingEnv) checkQuietUntil(id string, from, until time.Time) {
	e.t.Helper()
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
	assert.LessOrEqual(e.t, len(probed), inFlightAtFreeze, "checkers probed by %s in the %s before it renewed its Lease: %v", id, until.Sub(from).Round(time.Millisecond), probed)
	e.t.Logf("MEASURED %s probed %d checkers and wrote %d statuses in the %s from SIGCONT to its renewal",
		id, len(probed), len(written), until.Sub(from).Round(time.Millisecond))
	assert.Empty(e.t, written, "statuses written by %s in the %s before it renewed its Lease", id, until.Sub(from).Round(time.Millisecond))
}
