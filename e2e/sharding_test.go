package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

// Settings of TestSharding. The limits below are the acceptance criteria of
// the sharding feature; they are derived from these settings.
const (
	shardingNamespace      = "e2e-sharding"
	shardingLeaseNamespace = "e2e-sharding-leases"
	shardingCheckers       = 300
	shardingInterval       = 2 * time.Second
	shardingTimeout        = time.Second
	shardingLeaseDuration  = 5 * time.Second
	shardingRenewInterval  = time.Second
	shardingVirtualNodes   = 100

	// allReadyWithin: every checker Ready, from the last creation.
	allReadyWithin = 15 * time.Second
	// crashTakeoverWithin: a kill -9'd replica's checkers probed by a
	// survivor and showing its status.shard, from the kill.
	crashTakeoverWithin = shardingLeaseDuration + shardingInterval + 2*time.Second
	// gracefulTakeoverWithin: the same after SIGTERM, from the signal.
	gracefulTakeoverWithin = shardingInterval + 2*time.Second
	// leaseReleasedWithin: the Lease of a SIGTERM'd replica is gone.
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
	e.phase("create 300 WebCheckers")
	lastCreated := e.createCheckers()
	t.Logf("created %d WebCheckers in %s", shardingCheckers, lastCreated.Sub(e.phaseStart).Round(time.Millisecond))

	allReady, ok := e.waitAllReady(lastCreated, allReadyWithin)
	require.True(t, ok, "not all %d WebCheckers Ready within %s of the last creation: %s", shardingCheckers, allReadyWithin, e.notReadySummary())
	t.Logf("MEASURED time to all-Ready: %s after the last creation (limit %s)", allReady.Sub(lastCreated).Round(time.Millisecond), allReadyWithin)

	counts := e.checkAssignment("initial")
	for _, id := range e.live {
		assert.GreaterOrEqual(t, counts[id], 70, "replica %s owns too few checkers", id)
		assert.LessOrEqual(t, counts[id], 130, "replica %s owns too many checkers", id)
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
	t.Logf("MEASURED crash takeover max: %s after kill -9 (limit %s)", crashTakeover.Round(time.Millisecond), crashTakeoverWithin)
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
	leaseGone, gone := e.waitLeaseGone(stopped, leaseReleasedWithin)
	if gone {
		t.Logf("MEASURED lease deletion: Lease %s/%s NotFound %s after SIGTERM (limit %s)", e.leaseNS, stopped, leaseGone.Sub(tTerm).Round(time.Millisecond), leaseReleasedWithin)
	}
	assert.True(t, gone, "the Lease of %s still exists %s after SIGTERM", stopped, leaseReleasedWithin)
	if !gone {
		leaseGone = tTerm.Add(shardingLeaseDuration) // it expires at the latest then
	}
	e.memberGone(stopped, tTerm, leaseGone)
	gracefulTakeover := e.handOver(before, tTerm, gracefulTakeoverWithin, 30*time.Second)
	t.Logf("MEASURED graceful takeover max: %s after SIGTERM (limit %s)", gracefulTakeover.Round(time.Millisecond), gracefulTakeoverWithin)
	select {
	case x := <-terminated:
		require.NoError(t, x.err, "%s did not exit cleanly after SIGTERM\n%s", stopped, tail(e.managers[stopped].Log(), 40))
		t.Logf("%s exited %s after SIGTERM", stopped, x.at.Sub(tTerm).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		require.Fail(t, "Terminate did not return", stopped)
	}
	require.ElementsMatch(t, e.live, e.liveLeaseHolders(), "live Leases after SIGTERM")
	e.checkAssignment("after SIGTERM")
	e.checkSteadyProbing("after SIGTERM")

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
	e.rec.stop()
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

// shardingEnv is the state of TestSharding: the clients, the target, the
// records of probes and status writes, the replicas and the membership
// history the test drove.
type shardingEnv struct {
	t          *testing.T
	ctx        context.Context
	c          client.WithWatch
	ns         string
	leaseNS    string
	ringName   string
	target     *framework.Target
	hits       *hitIndex
	rec        *statusRecorder
	phaseStart time.Time

	names  []string          // checker names; names[i] is probed at /c/i
	pathOf map[string]string // checker name -> probe path

	managers map[string]*framework.Manager
	started  []string             // shard ids in start order
	live     []string             // sorted ids of the replicas that must be live now
	dead     map[string]time.Time // replica -> when it was killed or terminated
	changes  []membershipChange
	rings    map[string]*ring.Ring
}

// membershipChange is one change of the ring's members the test caused. It
// starts with the action (kill, SIGTERM, start) and has settled once every
// replica can have seen it; until changeGrace after that, the old and the
// new owner of a checker may both write its status.
type membershipChange struct {
	what           string
	start, settled time.Time
	before, after  []string
}

func (c membershipChange) graceEnd() time.Time { return c.settled.Add(changeGrace) }

func newShardingEnv(t *testing.T) *shardingEnv {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = 500, 1000 // 300 creations and frequent polls
	c, err := client.NewWithWatch(&cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)

	e := &shardingEnv{
		t: t, ctx: ctx, c: c,
		ns:       shardingNamespace,
		leaseNS:  shardingLeaseNamespace,
		ringName: fmt.Sprintf("e2e-sharding-%d", time.Now().UnixNano()),
		pathOf:   map[string]string{},
		managers: map[string]*framework.Manager{},
		dead:     map[string]time.Time{},
		rings:    map[string]*ring.Ring{},
	}
	for _, ns := range []string{e.ns, e.leaseNS} {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "creating namespace %s", ns)
		}
	}
	for i := range shardingCheckers {
		name := fmt.Sprintf("wc-%03d", i)
		e.names = append(e.names, name)
		e.pathOf[name] = "/c/" + strconv.Itoa(i)
	}

	e.target = framework.NewTarget()
	t.Cleanup(e.target.Close)
	e.hits = newHitIndex(e.target)

	e.rec, err = startStatusRecorder(ctx, c, e.ns)
	require.NoError(t, err)
	t.Cleanup(e.rec.stop)

	// Runs before the cleanups above (LIFO) but after the managers' own
	// cleanups registered later: every process is gone by then.
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range e.started {
				t.Logf("----- last lines of manager %s -----\n%s", id, tail(e.managers[id].Log(), 60))
			}
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		_ = c.DeleteAllOf(cctx, &webcheckerv1alpha1.WebChecker{}, client.InNamespace(e.ns))
		_ = c.DeleteAllOf(cctx, &coordinationv1.Lease{}, client.InNamespace(e.leaseNS), client.MatchingLabels{membership.LabelRing: e.ringName})
	})
	return e
}

func (e *shardingEnv) phase(name string) {
	e.phaseStart = time.Now()
	e.t.Logf("===== phase: %s", name)
}

// startReplica starts a manager process in the ring and makes sure it is
// killed when the test ends, whatever happens.
func (e *shardingEnv) startReplica(id string) *framework.Manager {
	e.t.Helper()
	m, err := framework.StartManager(e.ctx, framework.ManagerOptions{
		Binary:     managerPath,
		Kubeconfig: cp.KubeconfigPath,
		ShardID:    id,
		DNSServer:  dns.Addr(),
		Args: []string{
			"--lease-namespace=" + e.leaseNS,
			"--ring-name=" + e.ringName,
			"--lease-duration=" + shardingLeaseDuration.String(),
			"--lease-renew-interval=" + shardingRenewInterval.String(),
			// Sub-second timestamps, to tell when a replica changed its ring.
			"--zap-time-encoding=rfc3339nano",
		},
	})
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		if !m.Exited() {
			_ = m.Kill()
		}
	})
	e.managers[id] = m
	e.started = append(e.started, id)
	e.live = sortedWith(e.live, id)
	return m
}

// memberGone records that id was killed or terminated at start and that the
// others can have dropped it from the ring by settled.
func (e *shardingEnv) memberGone(id string, start, settled time.Time) {
	before := slices.Clone(e.live)
	e.live = slices.DeleteFunc(slices.Clone(e.live), func(m string) bool { return m == id })
	e.dead[id] = start
	e.changes = append(e.changes, membershipChange{what: id + " gone", start: start, settled: settled, before: before, after: slices.Clone(e.live)})
}

// waitGraceOver waits until the last membership change's grace period is
// over, so that each phase starts from a settled ring.
func (e *shardingEnv) waitGraceOver() {
	if len(e.changes) == 0 {
		return
	}
	if d := time.Until(e.changes[len(e.changes)-1].graceEnd()); d > 0 {
		time.Sleep(d + 100*time.Millisecond)
	}
}

// ring returns the ring of members (cached).
func (e *shardingEnv) ring(members []string) *ring.Ring {
	k := strings.Join(members, ",")
	r, ok := e.rings[k]
	if !ok {
		r = ring.New(members, shardingVirtualNodes)
		e.rings[k] = r
	}
	return r
}

// owners returns the owner of every checker in the ring of members.
func (e *shardingEnv) owners(members []string) map[string]string {
	r := e.ring(members)
	owners := make(map[string]string, len(e.names))
	for _, name := range e.names {
		owners[name] = r.Owner(ring.Key(e.ns, name))
	}
	return owners
}

// ringAt returns the members the test expects at instant at.
func (e *shardingEnv) ringAt(at time.Time) []string {
	members := []string{"replica-a", "replica-b", "replica-c"}
	for _, c := range e.changes {
		if !c.start.After(at) {
			members = c.after
		}
	}
	return members
}

// ----------------------------------------------------------------------
// Replicas' view of the ring.

// ringLine is the part of the assigner's "Ring changed" log line the test
// reads.
type ringLine struct {
	TS      string   `json:"ts"`
	Msg     string   `json:"msg"`
	Members []string `json:"members"`
	Fenced  bool     `json:"fenced"`
}

// lastRing returns the last ring change a manager logged.
func lastRing(log string) (ringLine, bool) {
	var last ringLine
	found := false
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `"Ring changed"`) {
			continue
		}
		var l ringLine
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "Ring changed" {
			last, found = l, true
		}
	}
	return last, found
}

// waitRingAgreed waits until every replica in members has logged, as its
// last ring change, an unfenced ring of exactly members. It returns the
// latest of their log timestamps (zero and a test failure on timeout).
func (e *shardingEnv) waitRingAgreed(members []string, within time.Duration) time.Time {
	e.t.Helper()
	var latest time.Time
	var views []string
	ok := poll(within, 50*time.Millisecond, func() bool {
		latest, views = time.Time{}, nil
		agreed := true
		for _, id := range members {
			l, found := lastRing(e.managers[id].Log())
			views = append(views, fmt.Sprintf("%s: %v fenced=%t", id, l.Members, l.Fenced))
			if !found || l.Fenced || !slices.Equal(l.Members, members) {
				agreed = false
				continue
			}
			ts, err := time.Parse(time.RFC3339Nano, l.TS)
			if err != nil {
				ts = time.Now()
			}
			if ts.After(latest) {
				latest = ts
			}
		}
		return agreed
	})
	if !ok {
		assert.Fail(e.t, "replicas do not agree on the ring", "want %v within %s; last logged rings: %v", members, within, views)
		return time.Time{}
	}
	return latest
}

// liveLeaseHolders returns the sorted holders of the ring's live Leases.
func (e *shardingEnv) liveLeaseHolders() []string {
	e.t.Helper()
	var leases coordinationv1.LeaseList
	require.NoError(e.t, e.c.List(e.ctx, &leases, client.InNamespace(e.leaseNS), client.MatchingLabels{membership.LabelRing: e.ringName}))
	ids, _ := membership.Live(leases.Items, time.Now())
	return ids
}

// waitLeaseGone polls the Lease of id until it is NotFound.
func (e *shardingEnv) waitLeaseGone(id string, within time.Duration) (time.Time, bool) {
	var at time.Time
	ok := poll(within, 20*time.Millisecond, func() bool {
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.leaseNS, Name: id}, &coordinationv1.Lease{})
		if apierrors.IsNotFound(err) {
			at = time.Now()
			return true
		}
		return false
	})
	return at, ok
}

// ----------------------------------------------------------------------
// WebCheckers.

// createCheckers creates the WebCheckers concurrently and returns when the
// last creation returned.
func (e *shardingEnv) createCheckers() time.Time {
	e.t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	work := make(chan string)
	for range 16 {
		wg.Go(func() {
			for name := range work {
				wc := &webcheckerv1alpha1.WebChecker{
					ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
					Spec: webcheckerv1alpha1.WebCheckerSpec{
						Host:     e.target.URL(),
						Path:     e.pathOf[name],
						Interval: &metav1.Duration{Duration: shardingInterval},
						Timeout:  &metav1.Duration{Duration: shardingTimeout},
					},
				}
				if err := e.c.Create(e.ctx, wc); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("creating %s: %w", name, err))
					mu.Unlock()
				}
			}
		})
	}
	for _, name := range e.names {
		work <- name
	}
	close(work)
	wg.Wait()
	done := time.Now()
	require.NoError(e.t, errors.Join(errs...))
	return done
}

func (e *shardingEnv) list() []webcheckerv1alpha1.WebChecker {
	e.t.Helper()
	var list webcheckerv1alpha1.WebCheckerList
	require.NoError(e.t, e.c.List(e.ctx, &list, client.InNamespace(e.ns)))
	return list.Items
}

func readyOf(wc *webcheckerv1alpha1.WebChecker) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady); c != nil {
		return c.Status
	}
	return ""
}

// waitAllReady polls until every checker is Ready=True and returns when it
// saw that; the deadline counts from since.
func (e *shardingEnv) waitAllReady(since time.Time, within time.Duration) (time.Time, bool) {
	var at time.Time
	ok := poll(time.Until(since.Add(within)), 200*time.Millisecond, func() bool {
		items := e.list()
		if len(items) != shardingCheckers {
			return false
		}
		for i := range items {
			if readyOf(&items[i]) != metav1.ConditionTrue {
				return false
			}
		}
		at = time.Now()
		return true
	})
	return at, ok
}

func (e *shardingEnv) notReadySummary() string {
	byState := map[string]int{}
	for _, wc := range e.list() {
		c := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
		state := "no condition"
		if c != nil {
			state = string(c.Status) + "/" + c.Reason
		}
		byState[state+" shard="+wc.Status.Shard]++
	}
	return fmt.Sprint(byState)
}

// checkAssignment checks that every checker is Ready and that its
// status.shard is its owner in the ring of the live replicas; it returns how
// many checkers each replica owns.
func (e *shardingEnv) checkAssignment(phase string) map[string]int {
	e.t.Helper()
	owners := e.owners(e.live)
	computed := map[string]int{}
	for _, o := range owners {
		computed[o]++
	}
	observed := map[string]int{}
	var wrong []string
	notReady := 0
	for _, wc := range e.list() {
		observed[wc.Status.Shard]++
		if want := owners[wc.Name]; wc.Status.Shard != want {
			wrong = append(wrong, fmt.Sprintf("%s: shard %q, owner %q", wc.Name, wc.Status.Shard, want))
		}
		if readyOf(&wc) != metav1.ConditionTrue {
			notReady++
		}
	}
	assert.Empty(e.t, wrong, "%s: status.shard is not the ring owner", phase)
	assert.Zero(e.t, notReady, "%s: WebCheckers not Ready", phase)
	assert.Equal(e.t, computed, observed, "%s: checkers per replica, computed vs status.shard", phase)
	e.t.Logf("%s: checkers per replica %v (ring %v)", phase, observed, e.live)
	return observed
}

// checkSteadyProbing counts, over two intervals, the probes of every checker
// per replica: each must be probed by exactly one replica, its owner.
func (e *shardingEnv) checkSteadyProbing(phase string) {
	e.t.Helper()
	owners := e.owners(e.live)
	from := time.Now()
	to := from.Add(2 * shardingInterval)
	// Requests are recorded when they arrive: wait a little beyond the
	// window for those sent at its very end.
	time.Sleep(time.Until(to) + 500*time.Millisecond)
	e.hits.sync()
	perShard := map[string]int{}
	histogram := map[int]int{} // probes per checker in the window -> checkers
	var unprobed, wrongProber []string
	for _, name := range e.names {
		by := map[string]int{}
		n := 0
		for _, h := range e.hits.between(e.pathOf[name], from, to) {
			by[h.shard]++
			perShard[h.shard]++
			n++
		}
		histogram[n]++
		switch {
		case n == 0:
			unprobed = append(unprobed, name)
		case len(by) != 1 || by[owners[name]] == 0:
			wrongProber = append(wrongProber, fmt.Sprintf("%s (owner %s): %v", name, owners[name], by))
		}
	}
	assert.Empty(e.t, unprobed, "%s: checkers not probed in two intervals", phase)
	assert.Empty(e.t, wrongProber, "%s: checkers not probed by exactly their owner", phase)
	e.t.Logf("%s: over two intervals, probes per replica %v; checkers by probe count %v", phase, perShard, histogram)
}

// handOver waits until every checker whose owner changed from the ring of
// oldMembers to the current ring has been probed by its new owner and shows it in
// status.shard, both after since. It checks that the other checkers kept
// their owner, and returns the slowest takeover, which must be within limit.
func (e *shardingEnv) handOver(oldMembers []string, since time.Time, limit, wait time.Duration) time.Duration {
	e.t.Helper()
	before, after := e.owners(oldMembers), e.owners(e.live)
	var moved, wrongMoves []string
	for _, name := range e.names {
		if before[name] == after[name] {
			continue
		}
		moved = append(moved, name)
		// Consistent hashing: a checker moves only away from a replica
		// that left or onto one that joined.
		if slices.Contains(e.live, before[name]) && slices.Contains(oldMembers, after[name]) {
			wrongMoves = append(wrongMoves, fmt.Sprintf("%s: %s -> %s", name, before[name], after[name]))
		}
	}
	assert.Empty(e.t, wrongMoves, "ring: checkers moved between replicas that stay")
	require.NotEmpty(e.t, moved)
	took, missing := e.awaitOwners(moved, after, since, wait)
	require.Empty(e.t, missing, "checkers not taken over within %s", wait)
	slowest, slowestName := time.Duration(0), ""
	var late []string
	for _, name := range moved {
		if d := took[name]; d > slowest {
			slowest, slowestName = d, name
		}
		if took[name] > limit {
			late = append(late, fmt.Sprintf("%s: %s", name, took[name].Round(time.Millisecond)))
		}
	}
	assert.Empty(e.t, late, "checkers taken over later than %s", limit)
	e.t.Logf("%d checkers changed owner; slowest %s in %s", len(moved), slowestName, slowest.Round(time.Millisecond))
	return slowest
}

// awaitOwners waits until every checker in names has, after since, been
// probed by want[name] and shown want[name] as status.shard. It returns, per
// checker, the time from since until both had happened, and the checkers
// for which that did not happen within wait.
func (e *shardingEnv) awaitOwners(names []string, want map[string]string, since time.Time, wait time.Duration) (map[string]time.Duration, []string) {
	took := map[string]time.Duration{}
	var missing []string
	poll(wait, 100*time.Millisecond, func() bool {
		e.hits.sync()
		written := e.rec.firstWrites(since, want)
		missing = missing[:0]
		for _, name := range names {
			if _, done := took[name]; done {
				continue
			}
			w, ok := written[name]
			p, probed := e.hits.first(e.pathOf[name], since, want[name])
			if !ok || !probed {
				missing = append(missing, name)
				continue
			}
			took[name] = later(w, p).Sub(since)
		}
		return len(missing) == 0
	})
	return took, missing
}

// scaleOut starts a replica and checks that it takes a fair share of the
// checkers and that no checker moves between the replicas that were there.
func (e *shardingEnv) scaleOut(id string) {
	e.t.Helper()
	old := slices.Clone(e.live)
	before := e.owners(old)
	start := time.Now()
	e.startReplica(id)
	n := len(e.live)
	// The change has settled once every replica, the new one included, has
	// seen it; the grace period counts from there.
	settled := e.waitRingAgreed(e.live, 30*time.Second)
	if settled.IsZero() {
		settled = time.Now()
	}
	e.changes = append(e.changes, membershipChange{what: id + " joined", start: start, settled: settled, before: old, after: slices.Clone(e.live)})
	e.t.Logf("every replica saw %s join %s after it was started", id, settled.Sub(start).Round(time.Millisecond))
	require.ElementsMatch(e.t, e.live, e.liveLeaseHolders(), "live Leases after %s joined", id)

	after := e.owners(e.live)
	taken := 0
	var movedBetweenOld []string
	for _, name := range e.names {
		switch after[name] {
		case id:
			taken++
		case before[name]:
		default:
			movedBetweenOld = append(movedBetweenOld, fmt.Sprintf("%s: %s -> %s", name, before[name], after[name]))
		}
	}
	assert.Empty(e.t, movedBetweenOld, "ring: checkers moved between replicas that were already there")
	lo, hi := 0.5/float64(n)*shardingCheckers, 1.6/float64(n)*shardingCheckers
	assert.GreaterOrEqual(e.t, float64(taken), lo, "%s takes too few checkers", id)
	assert.LessOrEqual(e.t, float64(taken), hi, "%s takes too many checkers", id)

	took := e.handOver(old, start, 30*time.Second, 30*time.Second)
	e.t.Logf("MEASURED scale-out to %d replicas: %s took %d of %d checkers (moved fraction %.3f, fair share %.3f, allowed %.0f-%.0f); slowest takeover %s after the start",
		n, id, taken, shardingCheckers, float64(taken)/shardingCheckers, 1/float64(n), lo, hi, took.Round(time.Millisecond))

	// Observed: the checkers that stayed were neither written nor probed
	// by anyone but their owner since the new replica started.
	e.hits.sync()
	var wrongWrites, wrongProbes []string
	for _, ev := range e.rec.snapshot() {
		if ev.at.Before(start) || ev.shard == "" || after[ev.name] == id {
			continue
		}
		if ev.shard != before[ev.name] {
			wrongWrites = append(wrongWrites, fmt.Sprintf("%s written by %s at +%s (owner %s)", ev.name, ev.shard, ev.at.Sub(start).Round(time.Millisecond), before[ev.name]))
		}
	}
	for _, name := range e.names {
		if after[name] == id {
			continue
		}
		for _, h := range e.hits.between(e.pathOf[name], start, time.Now()) {
			if h.shard != before[name] {
				wrongProbes = append(wrongProbes, fmt.Sprintf("%s probed by %s at +%s (owner %s)", name, h.shard, h.at.Sub(start).Round(time.Millisecond), before[name]))
			}
		}
	}
	assert.Empty(e.t, wrongWrites, "status of checkers that did not move to %s written by another replica", id)
	assert.Empty(e.t, wrongProbes, "checkers that did not move to %s probed by another replica", id)
}

// ----------------------------------------------------------------------
// Whole-test invariants.

// checkProbeGaps checks that no checker went unprobed for longer than
// maxProbeGap, from its first probe until end.
func (e *shardingEnv) checkProbeGaps(end time.Time) {
	e.t.Helper()
	e.hits.sync()
	var worst time.Duration
	var worstName string
	var worstAt time.Time
	var long []string
	for _, name := range e.names {
		hs := e.hits.between(e.pathOf[name], time.Time{}, end)
		if !assert.NotEmpty(e.t, hs, "%s was never probed", name) {
			continue
		}
		times := make([]time.Time, 0, len(hs)+1)
		for _, h := range hs {
			times = append(times, h.at)
		}
		times = append(times, end)
		for i := 1; i < len(times); i++ {
			gap := times[i].Sub(times[i-1])
			if gap > worst {
				worst, worstName, worstAt = gap, name, times[i-1]
			}
			if gap > maxProbeGap {
				long = append(long, fmt.Sprintf("%s: %s from %s", name, gap.Round(time.Millisecond), times[i-1].Format("15:04:05.000")))
			}
		}
	}
	assert.Empty(e.t, long, "checkers unprobed for longer than %s", maxProbeGap)
	e.t.Logf("MEASURED max probe gap: %s (%s, from %s; limit %s); membership changes: %s",
		worst.Round(time.Millisecond), worstName, worstAt.Format("15:04:05.000"), maxProbeGap, e.describeChanges())
}

func (e *shardingEnv) describeChanges() string {
	var parts []string
	for _, c := range e.changes {
		parts = append(parts, fmt.Sprintf("%s at %s (settled +%s)", c.what, c.start.Format("15:04:05.000"), c.settled.Sub(c.start).Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// checkStatusWriters checks every status write the watch saw until end: its
// writer (status.shard) must be the ring owner of the checker at that
// moment; within the grace period of a membership change the owner before
// the change is allowed too, but never a replica that was killed or
// terminated more than deadWriteSlack before.
func (e *shardingEnv) checkStatusWriters(end time.Time) {
	e.t.Helper()
	var bad []string
	inGrace, outside := 0, 0
	for _, ev := range e.rec.snapshot() {
		if ev.shard == "" || ev.at.After(end) {
			continue // the creation, or after the observation
		}
		key := ring.Key(e.ns, ev.name)
		allowed := map[string]bool{e.ring(e.ringAt(ev.at)).Owner(key): true}
		grace := false
		for _, c := range e.changes {
			if !ev.at.Before(c.start) && !ev.at.After(c.graceEnd()) {
				grace = true
				allowed[e.ring(c.before).Owner(key)] = true
				allowed[e.ring(c.after).Owner(key)] = true
			}
		}
		if grace {
			inGrace++
		} else {
			outside++
		}
		switch died, isDead := e.dead[ev.shard]; {
		case isDead && ev.at.After(died.Add(deadWriteSlack)):
			bad = append(bad, fmt.Sprintf("%s rv=%s written by %s at %s, %s after it was stopped",
				ev.name, ev.rv, ev.shard, ev.at.Format("15:04:05.000"), ev.at.Sub(died).Round(time.Millisecond)))
		case !allowed[ev.shard]:
			bad = append(bad, fmt.Sprintf("%s rv=%s written by %s at %s (grace=%t), allowed %v",
				ev.name, ev.rv, ev.shard, ev.at.Format("15:04:05.000"), grace, slices.Sorted(maps.Keys(allowed))))
		}
	}
	assert.Empty(e.t, bad, "status writes by a replica that did not own the checker")
	e.t.Logf("status writes checked: %d outside grace periods (writer must be the ring owner), %d within (old or new owner); %d by a non-owner",
		outside, inGrace, len(bad))
	assert.Positive(e.t, outside)
	if errs := e.rec.errors(); len(errs) > 0 {
		assert.Fail(e.t, "the status watch was interrupted; writes may be missing", "%v", errs)
	}
}

// checkReadyNeverLost checks that, once every checker was Ready, no status
// write made one of them anything but Ready (the target always answered
// 200): a takeover must not reset a checker's condition.
func (e *shardingEnv) checkReadyNeverLost(allReady, end time.Time) {
	e.t.Helper()
	var lost []string
	for _, ev := range e.rec.snapshot() {
		if ev.at.After(allReady) && !ev.at.After(end) && ev.ready != metav1.ConditionTrue {
			lost = append(lost, fmt.Sprintf("%s rv=%s at %s by %s: Ready=%q", ev.name, ev.rv, ev.at.Format("15:04:05.000"), ev.shard, ev.ready))
		}
	}
	assert.Empty(e.t, lost, "a healthy checker stopped being Ready")
}

// ----------------------------------------------------------------------
// Probes, from the target's point of view.

type probeHit struct {
	at    time.Time
	shard string
}

// hitIndex indexes the target's hits by path. It is used from the test
// goroutine only.
type hitIndex struct {
	target *framework.Target
	total  int
	byPath map[string][]probeHit // in arrival order
}

func newHitIndex(target *framework.Target) *hitIndex {
	return &hitIndex{target: target, byPath: map[string][]probeHit{}}
}

const userAgentPrefix, userAgentSuffix = "webchecker (shard ", ")"

// sync reads the hits received since the last sync.
func (h *hitIndex) sync() {
	hits := h.target.HitsSince(h.total)
	h.total += len(hits)
	for _, hit := range hits {
		ua := hit.Header.Get("User-Agent")
		shard := "?" + ua
		if strings.HasPrefix(ua, userAgentPrefix) && strings.HasSuffix(ua, userAgentSuffix) {
			shard = strings.TrimSuffix(strings.TrimPrefix(ua, userAgentPrefix), userAgentSuffix)
		}
		h.byPath[hit.Path] = append(h.byPath[hit.Path], probeHit{at: hit.Time, shard: shard})
	}
}

// between returns the hits of path in [from, to).
func (h *hitIndex) between(path string, from, to time.Time) []probeHit {
	all := h.byPath[path]
	i := sort.Search(len(all), func(i int) bool { return !all[i].at.Before(from) })
	j := sort.Search(len(all), func(i int) bool { return !all[i].at.Before(to) })
	if j < i {
		return nil
	}
	return all[i:j]
}

// first returns the time of the first hit of path by shard at or after
// since.
func (h *hitIndex) first(path string, since time.Time, shard string) (time.Time, bool) {
	all := h.byPath[path]
	for i := sort.Search(len(all), func(i int) bool { return !all[i].at.Before(since) }); i < len(all); i++ {
		if all[i].shard == shard {
			return all[i].at, true
		}
	}
	return time.Time{}, false
}

// ----------------------------------------------------------------------
// Status writes, from a watch.

// statusEvent is one watch event on a WebChecker: one write.
type statusEvent struct {
	at    time.Time // when the watch delivered it
	typ   watch.EventType
	name  string
	shard string
	rv    string
	ready metav1.ConditionStatus
}

// statusRecorder records every watch event on the WebCheckers of a
// namespace, resuming the watch from the last resourceVersion when the API
// server closes it.
type statusRecorder struct {
	mu     sync.Mutex
	events []statusEvent
	errs   []error

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startStatusRecorder(ctx context.Context, c client.WithWatch, ns string) (*statusRecorder, error) {
	var list webcheckerv1alpha1.WebCheckerList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing WebCheckers: %w", err)
	}
	rv := list.ResourceVersion
	w, err := watchFrom(ctx, c, ns, rv)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &statusRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			rv = r.drain(ctx, w, rv)
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			for {
				if w, err = watchFrom(ctx, c, ns, rv); err == nil {
					break
				}
				r.fail(err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}()
	return r, nil
}

func watchFrom(ctx context.Context, c client.WithWatch, ns, rv string) (watch.Interface, error) {
	w, err := c.Watch(ctx, &webcheckerv1alpha1.WebCheckerList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		return nil, fmt.Errorf("watching WebCheckers from resourceVersion %s: %w", rv, err)
	}
	return w, nil
}

// drain records the events of w until it closes and returns the last
// resourceVersion seen.
func (r *statusRecorder) drain(ctx context.Context, w watch.Interface, rv string) string {
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			now := time.Now()
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				wc, ok := ev.Object.(*webcheckerv1alpha1.WebChecker)
				if !ok {
					r.fail(fmt.Errorf("unexpected watch object %T", ev.Object))
					continue
				}
				rv = wc.ResourceVersion
				r.mu.Lock()
				r.events = append(r.events, statusEvent{at: now, typ: ev.Type, name: wc.Name, shard: wc.Status.Shard, rv: rv, ready: readyOf(wc)})
				r.mu.Unlock()
			case watch.Error:
				r.fail(fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object)))
				// A resourceVersion too old cannot be resumed: the events in
				// between are lost, which the test reports.
				return rv
			}
		}
	}
}

func (r *statusRecorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *statusRecorder) stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
}

func (r *statusRecorder) snapshot() []statusEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *statusRecorder) errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// firstWrites returns, per checker, when the watch first showed
// status.shard == want[name] at or after since.
func (r *statusRecorder) firstWrites(since time.Time, want map[string]string) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := map[string]time.Time{}
	for _, ev := range r.events {
		if ev.at.Before(since) || ev.shard == "" || ev.shard != want[ev.name] {
			continue
		}
		if _, seen := first[ev.name]; !seen {
			first[ev.name] = ev.at
		}
	}
	return first
}

// ----------------------------------------------------------------------
// Small helpers.

// poll calls cond every interval until it returns true (true) or within has
// passed (false). It calls cond in the calling goroutine, at least once.
func poll(within, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func sortedWith(ids []string, id string) []string {
	out := append(slices.Clone(ids), id)
	slices.Sort(out)
	return slices.Compact(out)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
