package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

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
	target     *probetest.Target
	hits       *hitIndex
	rec        *framework.StatusRecorder
	phaseStart time.Time

	names  []string          // checker names; names[i] is probed at /c/i
	pathOf map[string]string // checker name -> probe path

	managers map[string]*framework.Manager
	// kubeconfigs are the kubeconfig files of the replicas that do not
	// use the control plane's own.
	kubeconfigs map[string]string
	started     []string             // shard ids in start order
	live        []string             // sorted ids of the replicas that must be live now
	dead        map[string]time.Time // replica -> when it was killed or terminated
	changes     []membershipChange
	rings       map[string]*ring.Ring
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
	cfg.QPS, cfg.Burst = 500, 1000 // 1,000 creations and frequent polls
	c, err := client.NewWithWatch(&cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)

	e := &shardingEnv{
		t: t, ctx: ctx, c: c,
		ns:          shardingNamespace,
		leaseNS:     shardingLeaseNamespace,
		ringName:    fmt.Sprintf("e2e-sharding-%d", time.Now().UnixNano()),
		pathOf:      map[string]string{},
		managers:    map[string]*framework.Manager{},
		kubeconfigs: map[string]string{},
		dead:        map[string]time.Time{},
		rings:       map[string]*ring.Ring{},
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

	e.target = probetest.NewTarget()
	t.Cleanup(e.target.Close)
	e.hits = newHitIndex(e.target)

	e.rec, err = framework.StartStatusRecorder(ctx, c, e.ns)
	require.NoError(t, err)
	t.Cleanup(e.rec.Stop)

	// Runs before the cleanups above (LIFO) but after the managers' own
	// cleanups registered later: every process is gone by then.
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range e.started {
				t.Logf("----- last lines of manager %s -----\n%s", id, tail(e.managers[id].Log(), 60))
				if dir := os.Getenv("WEBCHECKER_E2E_LOG_DIR"); dir != "" {
					_ = os.WriteFile(filepath.Join(dir, id+".log"), []byte(e.managers[id].Log()), 0o644)
				}
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
		Kubeconfig: cmp.Or(e.kubeconfigs[id], cp.KubeconfigPath),
		ShardID:    id,
		DNSServer:  dns.Addr(),
		Args: []string{
			"--lease-namespace=" + e.leaseNS,
			"--ring-name=" + e.ringName,
			"--lease-duration=" + shardingLeaseDuration.String(),
			"--lease-renew-interval=" + shardingRenewInterval.String(),
			"--handover-lead=" + shardingHandOverLead.String(),
			fmt.Sprintf("--kube-api-qps=%d", shardingKubeAPIQPS),
			// Sub-second timestamps, to tell when a replica changed its ring.
			"--zap-time-encoding=rfc3339nano",
			"--zap-log-level=" + cmp.Or(os.Getenv("WEBCHECKER_E2E_LOG_LEVEL"), "info"),
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

// waitRingAgreed waits until every replica in members exports, on its
// metrics endpoint, an unfenced ring of exactly members (see ringOf). It
// returns the latest of the times their views last changed (zero and a
// test failure on timeout).
func (e *shardingEnv) waitRingAgreed(members []string, within time.Duration) time.Time {
	e.t.Helper()
	var latest time.Time
	var views []string
	ok := poll(within, 100*time.Millisecond, func() bool {
		latest, views = time.Time{}, views[:0]
		agreed := true
		for _, id := range members {
			r, err := ringOf(e.ctx, e.managers[id])
			if err != nil {
				views = append(views, fmt.Sprintf("%s: %v", id, err))
				agreed = false
				continue
			}
			views = append(views, id+": "+r.String())
			agreed = agreed && r.agrees(members)
			latest = later(latest, r.Changed)
		}
		return agreed
	})
	if !ok {
		assert.Fail(e.t, "replicas do not agree on the ring", "want %v within %s; last exported rings: %v", members, within, views)
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

// waitLeaving waits up to within for the Lease of replica id, asked to
// stop at signalled, to announce when it leaves the ring
// (membership.AnnotationLeavingAt), checks that the instant is the
// replica's --handover-lead after the signal, and returns it.
func (e *shardingEnv) waitLeaving(id string, signalled time.Time, within time.Duration) time.Time {
	e.t.Helper()
	var at time.Time
	ok := poll(within, 20*time.Millisecond, func() bool {
		var l coordinationv1.Lease
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.leaseNS, Name: id}, &l); err != nil {
			return false
		}
		var found bool
		at, found = membership.LeavingAt(&l)
		return found
	})
	require.True(e.t, ok, "the Lease of %s announced no leaving within %s of SIGTERM", id, within)
	lead := at.Sub(signalled)
	require.True(e.t, lead >= shardingHandOverLead && lead < shardingHandOverLead+time.Second,
		"%s announced it leaves %s after SIGTERM, want its lead %s", id, lead, shardingHandOverLead)
	return at
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
	err := createConcurrently(e.ctx, e.c, e.ns, 16, e.names, func(name string) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{
			Host:     e.target.URL(),
			Path:     e.pathOf[name],
			Interval: &metav1.Duration{Duration: shardingInterval},
			Timeout:  &metav1.Duration{Duration: shardingTimeout},
		}
	})
	done := time.Now()
	require.NoError(e.t, err)
	return done
}

func (e *shardingEnv) list() []webcheckerv1alpha1.WebChecker {
	e.t.Helper()
	var list webcheckerv1alpha1.WebCheckerList
	require.NoError(e.t, e.c.List(e.ctx, &list, client.InNamespace(e.ns)))
	return list.Items
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
			if framework.ReadyOf(&items[i]) != metav1.ConditionTrue {
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
		if framework.ReadyOf(&wc) != metav1.ConditionTrue {
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

// checkProbedOnce checks that none of the checkers that leaver owned in
// the ring of oldMembers was probed twice less than half an interval
// apart, by any replica, between from and to: a replica that stops hands
// each turn over once (it marks its released Lease with when it stopped
// probing, see membership.AnnotationProbingStopped).
func (e *shardingEnv) checkProbedOnce(phase string, oldMembers []string, leaver string, from, to time.Time) {
	e.t.Helper()
	e.hits.sync()
	owners := e.owners(oldMembers)
	var doubles []string
	n := 0
	for _, name := range e.names {
		if owners[name] != leaver {
			continue
		}
		n++
		hits := e.hits.between(e.pathOf[name], from, to)
		for i := 1; i < len(hits); i++ {
			if gap := hits[i].at.Sub(hits[i-1].at); gap < shardingInterval/2 {
				doubles = append(doubles, fmt.Sprintf("%s: %s then %s %s later", name, hits[i-1].shard, hits[i].shard, gap.Round(time.Millisecond)))
			}
		}
	}
	assert.Empty(e.t, doubles, "%s: checkers of %s probed twice within half an interval", phase, leaver)
	e.t.Logf("MEASURED %s: %d of the %d checkers of %s probed twice within half an interval", phase, len(doubles), n, leaver)
}

// takeover is how long the slowest of the checkers that moved took to be
// probed by its new owner, and to show it in status.shard.
type takeover struct {
	probed, shown time.Duration
}

// shardWriteBudget is how long the new owners need, beyond the probes, to
// write status.shard of the moved checkers: the first result a new owner
// writes carries it, one write per checker, at --kube-api-qps. It is the
// share of the busiest new owner over the QPS, plus a second of slack.
func shardWriteBudget(moved map[string]int) time.Duration {
	busiest := 0
	for _, n := range moved {
		busiest = max(busiest, n)
	}
	return time.Duration(float64(busiest)/shardingKubeAPIQPS*float64(time.Second)) + time.Second
}

// handOver waits until every checker whose owner changed from the ring of
// oldMembers to the current ring has been probed by its new owner and
// shows it in status.shard, both after since. It checks that the other
// checkers kept their owner, that every moved checker was probed by its
// new owner within probeLimit (the promise: probing does not wait for the
// API) and shown in status.shard within probeLimit plus the new owners'
// write budget, and returns the slowest takeover.
func (e *shardingEnv) handOver(oldMembers []string, since time.Time, probeLimit, wait time.Duration) takeover {
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
	movedTo := map[string]int{}
	for _, name := range moved {
		movedTo[after[name]]++
	}
	shownLimit := probeLimit + shardWriteBudget(movedTo)
	took, missing := e.awaitOwners(moved, after, since, wait)
	require.Empty(e.t, missing, "checkers not taken over within %s", wait)
	var slowest takeover
	var lateProbe, lateShown []string
	for _, name := range moved {
		t := took[name]
		slowest.probed, slowest.shown = max(slowest.probed, t.probed), max(slowest.shown, t.shown)
		if t.probed > probeLimit {
			lateProbe = append(lateProbe, fmt.Sprintf("%s: %s", name, t.probed.Round(time.Millisecond)))
		}
		if t.shown > shownLimit {
			lateShown = append(lateShown, fmt.Sprintf("%s: %s", name, t.shown.Round(time.Millisecond)))
		}
	}
	assert.Empty(e.t, lateProbe, "checkers first probed by their new owner later than %s", probeLimit)
	assert.Empty(e.t, lateShown, "checkers showing their new owner in status.shard later than %s", shownLimit)
	e.t.Logf("%d checkers changed owner (to %v); slowest first probe by the new owner %s (limit %s), slowest status.shard %s (limit %s)",
		len(moved), movedTo, slowest.probed.Round(time.Millisecond), probeLimit, slowest.shown.Round(time.Millisecond), shownLimit)
	return slowest
}

// awaitOwners waits until every checker in names has, after since, been
// probed by want[name] and shown want[name] as status.shard. It returns, per
// checker, the time from since until each had happened, and the checkers
// for which that did not happen within wait.
func (e *shardingEnv) awaitOwners(names []string, want map[string]string, since time.Time, wait time.Duration) (map[string]takeover, []string) {
	took := map[string]takeover{}
	var missing []string
	poll(wait, 100*time.Millisecond, func() bool {
		e.hits.sync()
		written := e.rec.FirstWrites(since, want)
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
			took[name] = takeover{probed: p.Sub(since), shown: w.Sub(since)}
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
	e.t.Logf("MEASURED scale-out to %d replicas: %s took %d of %d checkers (moved fraction %.3f, fair share %.3f, allowed %.0f-%.0f); slowest first probe %s, status.shard %s after the start",
		n, id, taken, shardingCheckers, float64(taken)/shardingCheckers, 1/float64(n), lo, hi, took.probed.Round(time.Millisecond), took.shown.Round(time.Millisecond))

	// Observed: the checkers that stayed were neither written nor probed
	// by anyone but their owner since the new replica started.
	e.hits.sync()
	var wrongWrites, wrongProbes []string
	for _, ev := range e.rec.Snapshot() {
		if ev.At.Before(start) || ev.Shard == "" || after[ev.Name] == id {
			continue
		}
		if ev.Shard != before[ev.Name] {
			wrongWrites = append(wrongWrites, fmt.Sprintf("%s written by %s at +%s (owner %s)", ev.Name, ev.Shard, ev.At.Sub(start).Round(time.Millisecond), before[ev.Name]))
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
