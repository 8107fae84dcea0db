package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

// Settings of TestQuorumProbing; the limits are the acceptance criteria of
// quorum probing, derived from them.
const (
	quorumNamespace      = "e2e-quorum"
	quorumLeaseNamespace = "e2e-quorum-leases"
	quorumSteadyCheckers = 300
	quorumInterval       = 4 * time.Second
	quorumLeaseDuration  = 5 * time.Second
	// quorumDeniedIP is the loopback address the replica in zone c may not
	// reach (--deny-cidrs).
	quorumDeniedIP = "127.0.0.2"
	// quorumFailsWithin: a target that really fails turns Ready False
	// (failureThreshold 1), from the first failing answer.
	quorumFailsWithin = quorumInterval*1 + 2*time.Second
	// quorumReformedWithin: after kill -9 of a replica, every set it was
	// in has its new member's entry and lost the dead one's.
	quorumReformedWithin = quorumLeaseDuration + quorumInterval + 2*time.Second
	// quorumEntriesFollowWithin: the entries follow the probes, at the
	// pace of the replicas' status writes (two per re-formed set: the
	// newcomer's entry, the owner's removal of the dead one's).
	quorumEntriesFollowWithin = 10 * time.Second
)

// quorumReplica is one manager process of TestQuorumProbing.
type quorumReplica struct {
	id, zone string
	deny     bool
}

// TestQuorumProbing runs four replicas in zones a, b, c and a: checkers
// with vantagePoints 3 are probed from the three zones and are Ready while
// a majority succeeds, though the zone-c replica may not reach their
// target; a checker with one vantage point owned by that replica is not.
// Each replica writes only its own entry, nothing is written in a steady
// minute, a target that fails turns Ready False in time, and after kill
// -9 of a replica every set it was in is re-formed in time.
func TestQuorumProbing(t *testing.T) {
	e := newQuorumEnv(t)
	replicas := []quorumReplica{{"quorum-a1", "zone-a", false}, {"quorum-b", "zone-b", false}, {"quorum-c", "zone-c", true}, {"quorum-a2", "zone-a", false}}
	for _, r := range replicas {
		e.start(r)
	}
	e.waitLeases(4, 30*time.Second)

	denied, err := framework.NewTargetAt(quorumDeniedIP)
	require.NoError(t, err)
	t.Cleanup(denied.Close)
	healthy := framework.NewTarget()
	t.Cleanup(healthy.Close)
	failing := framework.NewTarget()
	t.Cleanup(failing.Close)

	alone := e.nameOwnedBy("alone", "quorum-c")
	e.create("quorum", denied.URL(), 3)
	e.create(alone, denied.URL(), 1)
	e.create("fails", failing.URL(), 3)
	var steady []string
	for i := range quorumSteadyCheckers {
		steady = append(steady, fmt.Sprintf("steady-%03d", i))
	}
	e.createAll(steady, healthy.URL(), 3)
	created := time.Now()

	// All Ready as they should be, with the entry of every vantage point.
	e.waitFor(t, "every checker decided, every entry written", 60*time.Second, func(wcs map[string]*webcheckerv1alpha1.WebChecker) string {
		for name, wc := range wcs {
			want := metav1.ConditionTrue
			if name == alone {
				want = metav1.ConditionFalse
			}
			if got := readyOf(wc).Status; got != want {
				return fmt.Sprintf("%s: Ready %s, want %s", name, got, want)
			}
			if k := ptr.Deref(wc.Spec.VantagePoints, 1); k > 1 && len(wc.Status.VantagePoints) != int(k) {
				return fmt.Sprintf("%s: %d entries", name, len(wc.Status.VantagePoints))
			}
		}
		return ""
	})
	t.Logf("%d checkers decided %s after the last creation", len(steady)+3, time.Since(created).Round(time.Millisecond))

	wcs := e.list()
	q := wcs["quorum"]
	assert.True(t, strings.HasPrefix(readyOf(q).Message, "2 of 3 vantage points succeed ("), readyOf(q).Message)
	assert.Equal(t, "2/3", q.Status.Quorum)
	assert.Equal(t, e.expectedSet("quorum", 3), shardsOf(q.Status.VantagePoints), "the vantage points are the ring's, one per zone")
	for _, entry := range q.Status.VantagePoints {
		if entry.Shard == "quorum-c" {
			assert.Equal(t, metav1.ConditionFalse, entry.Ready)
			assert.Equal(t, "EgressDenied", entry.Reason)
		} else {
			assert.Equal(t, metav1.ConditionTrue, entry.Ready, "entry of %s", entry.Shard)
		}
	}
	assert.Equal(t, "EgressDenied", readyOf(wcs[alone]).Reason, "one vantage point in zone c: its probes decide")
	assertEntriesWrittenByTheirShards(t, wcs)

	// A steady minute writes nothing.
	before := e.resourceVersions()
	time.Sleep(time.Minute)
	after := e.resourceVersions()
	var written []string
	for name, rv := range after {
		if before[name] != rv {
			written = append(written, name)
		}
	}
	assert.Empty(t, written, "status writes in a steady minute with %d checkers at vantagePoints 3", len(after))
	t.Logf("steady minute: %d of %d checkers written", len(written), len(after))

	// A target that really fails: Ready False within interval + 2 s.
	failed := time.Now()
	failing.SetStatus(503)
	e.waitFor(t, "fails turns Ready False", quorumFailsWithin, func(wcs map[string]*webcheckerv1alpha1.WebChecker) string {
		if c := readyOf(wcs["fails"]); c.Status != metav1.ConditionFalse {
			return "fails: Ready " + string(c.Status) + ": " + c.Message
		}
		return ""
	})
	t.Logf("a failing target turned Ready False %s after it failed (limit %s)", time.Since(failed).Round(time.Millisecond), quorumFailsWithin)

	// kill -9 the zone-b replica: every set it was in gets a new member,
	// which probes the checker within lease duration + interval + 2 s (its
	// requests carry its shard id); the statuses follow at the pace of
	// the replicas' writes.
	oldSets := map[string][]string{}
	for _, name := range steady {
		oldSets[name] = e.expectedSet(name, 3)
	}
	killed := time.Now()
	require.NoError(t, e.managers["quorum-b"].Kill())
	delete(e.zones, "quorum-b")
	newcomers := map[string]string{} // checker path -> its new vantage point
	for _, name := range steady {
		for _, shard := range e.expectedSet(name, 3) {
			if !slices.Contains(oldSets[name], shard) {
				newcomers["/"+name] = shard
			}
		}
	}
	require.NotEmpty(t, newcomers)
	var late []string
	probedBy := func() map[string]time.Time {
		first := map[string]time.Time{}
		for _, hit := range healthy.Hits() {
			if shard, ok := newcomers[hit.Path]; ok && hit.Time.After(killed) && hit.Header.Get("User-Agent") == "webchecker (shard "+shard+")" {
				if _, seen := first[hit.Path]; !seen {
					first[hit.Path] = hit.Time
				}
			}
		}
		return first
	}
	require.True(t, poll(quorumReformedWithin+time.Second, 250*time.Millisecond, func() bool { return len(probedBy()) == len(newcomers) }),
		"%d of %d re-formed sets probed by their new member", len(probedBy()), len(newcomers))
	var slowest time.Duration
	for path, at := range probedBy() {
		slowest = max(slowest, at.Sub(killed))
		if at.Sub(killed) > quorumReformedWithin {
			late = append(late, path)
		}
	}
	assert.Empty(t, late, "sets whose new member probed later than %s after the kill", quorumReformedWithin)
	t.Logf("%d sets re-formed: every new member probed %s after kill -9 at the latest (limit %s)", len(newcomers), slowest.Round(time.Millisecond), quorumReformedWithin)

	// The statuses follow: the new member's entry, the dead one's removed.
	e.waitFor(t, "every set's entries re-formed", quorumReformedWithin+quorumEntriesFollowWithin, func(wcs map[string]*webcheckerv1alpha1.WebChecker) string {
		var wrong []string
		for name, wc := range wcs {
			k := int(ptr.Deref(wc.Spec.VantagePoints, 1))
			if k == 1 {
				continue
			}
			if want, got := e.expectedSet(name, k), shardsOf(wc.Status.VantagePoints); !slices.Equal(want, got) {
				wrong = append(wrong, fmt.Sprintf("%s: entries %v, want %v", name, got, want))
			}
		}
		if len(wrong) == 0 {
			return ""
		}
		slices.Sort(wrong)
		return fmt.Sprintf("%d sets not re-formed %s after the kill, such as %v", len(wrong), time.Since(killed).Round(time.Millisecond), wrong[:min(3, len(wrong))])
	})
	t.Logf("every set's entries re-formed %s after kill -9", time.Since(killed).Round(time.Millisecond))
	assertEntriesWrittenByTheirShards(t, e.list())
}

// quorumEnv is the state of TestQuorumProbing.
type quorumEnv struct {
	t        *testing.T
	ctx      context.Context
	c        client.Client
	ringName string
	managers map[string]*framework.Manager
	zones    map[string]string // live replica -> zone
}

func newQuorumEnv(t *testing.T) *quorumEnv {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(&cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	for _, ns := range []string{quorumNamespace, quorumLeaseNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	e := &quorumEnv{t: t, ctx: ctx, c: c, ringName: fmt.Sprintf("e2e-quorum-%d", time.Now().UnixNano()),
		managers: map[string]*framework.Manager{}, zones: map[string]string{}}
	t.Cleanup(func() {
		if t.Failed() {
			for id, m := range e.managers {
				t.Logf("----- last lines of manager %s -----\n%s", id, tail(m.Log(), 40))
				if dir := os.Getenv("WEBCHECKER_E2E_LOG_DIR"); dir != "" {
					_ = os.WriteFile(filepath.Join(dir, id+".log"), []byte(m.Log()), 0o644)
				}
			}
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		_ = c.DeleteAllOf(cctx, &webcheckerv1alpha1.WebChecker{}, client.InNamespace(quorumNamespace))
	})
	return e
}

func (e *quorumEnv) start(r quorumReplica) {
	e.t.Helper()
	args := []string{
		"--lease-namespace=" + quorumLeaseNamespace,
		"--ring-name=" + e.ringName,
		"--lease-duration=" + quorumLeaseDuration.String(),
		"--lease-renew-interval=1s",
		"--zone=" + r.zone,
		"--zap-time-encoding=rfc3339nano",
		"--zap-log-level=" + cmp.Or(os.Getenv("WEBCHECKER_E2E_LOG_LEVEL"), "info"),
	}
	if r.deny {
		args = append(args, "--deny-cidrs="+strings.Join(append(slices.Clone(egress.DefaultDenyCIDRs), quorumDeniedIP+"/32"), ","))
	}
	m, err := framework.StartManager(e.ctx, framework.ManagerOptions{
		Binary: managerPath, Kubeconfig: cp.KubeconfigPath, ShardID: r.id, DNSServer: dns.Addr(), Args: args,
	})
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		if !m.Exited() {
			_ = m.Kill()
		}
	})
	e.managers[r.id], e.zones[r.id] = m, r.zone
}

// waitLeases waits until n replicas hold a live Lease of the ring.
func (e *quorumEnv) waitLeases(n int, within time.Duration) {
	e.t.Helper()
	require.True(e.t, poll(within, 100*time.Millisecond, func() bool {
		var leases coordinationv1.LeaseList
		if e.c.List(e.ctx, &leases, client.InNamespace(quorumLeaseNamespace), client.MatchingLabels{membership.LabelRing: e.ringName}) != nil {
			return false
		}
		live, _ := membership.Live(leases.Items, time.Now())
		return len(live) == n
	}), "%d replicas on the ring", n)
}

// ring is the ring of the live replicas.
func (e *quorumEnv) ring() *ring.Ring {
	return ring.New(slices.Sorted(maps.Keys(e.zones)), ring.DefaultVirtualNodes)
}

// expectedSet is the shards that probe the checker name with k vantage
// points on the ring of the live replicas, in order.
func (e *quorumEnv) expectedSet(name string, k int) []string {
	set := e.ring().VantagePoints(ring.Key(quorumNamespace, name), k, func(m string) string { return e.zones[m] })
	return slices.Sorted(slices.Values(set))
}

// nameOwnedBy returns the first name prefix-<i> that shard owns.
func (e *quorumEnv) nameOwnedBy(prefix, shard string) string {
	r := e.ring()
	for i := 0; ; i++ {
		if name := fmt.Sprintf("%s-%d", prefix, i); r.Owner(ring.Key(quorumNamespace, name)) == shard {
			return name
		}
	}
}

func (e *quorumEnv) create(name, url string, vantagePoints int32) {
	e.t.Helper()
	wc := &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: quorumNamespace, Name: name},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host: url, Path: "/" + name,
			Interval:      &metav1.Duration{Duration: quorumInterval},
			VantagePoints: ptr.To(vantagePoints),
		},
	}
	require.NoError(e.t, e.c.Create(e.ctx, wc), "creating %s", name)
}

// createAll creates the checkers names concurrently.
func (e *quorumEnv) createAll(names []string, url string, vantagePoints int32) {
	var wg sync.WaitGroup
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for name := range work {
				e.create(name, url, vantagePoints)
			}
		})
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
}

func (e *quorumEnv) list() map[string]*webcheckerv1alpha1.WebChecker {
	e.t.Helper()
	var list webcheckerv1alpha1.WebCheckerList
	require.NoError(e.t, e.c.List(e.ctx, &list, client.InNamespace(quorumNamespace)))
	out := make(map[string]*webcheckerv1alpha1.WebChecker, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func (e *quorumEnv) resourceVersions() map[string]string {
	out := map[string]string{}
	for name, wc := range e.list() {
		out[name] = wc.ResourceVersion
	}
	return out
}

// waitFor polls the checkers until check returns "" (what is still wrong
// otherwise), and fails the test with the last complaint after within.
func (e *quorumEnv) waitFor(t *testing.T, what string, within time.Duration, check func(map[string]*webcheckerv1alpha1.WebChecker) string) {
	t.Helper()
	var complaint string
	// Every poll lists all the checkers: not so often that the API
	// server, which the replicas share, is busy serving the test.
	if !poll(within, 250*time.Millisecond, func() bool {
		complaint = check(e.list())
		return complaint == ""
	}) {
		require.Fail(t, what+" within "+within.String(), complaint)
	}
}

func readyOf(wc *webcheckerv1alpha1.WebChecker) metav1.Condition {
	if c := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func shardsOf(entries []webcheckerv1alpha1.VantagePointStatus) []string {
	var shards []string
	for _, e := range entries {
		shards = append(shards, e.Shard)
	}
	slices.Sort(shards)
	return shards
}

// assertEntriesWrittenByTheirShards checks in managedFields that every
// entry of status.vantagePoints is managed by its own shard's field
// manager alone.
func assertEntriesWrittenByTheirShards(t *testing.T, wcs map[string]*webcheckerv1alpha1.WebChecker) {
	t.Helper()
	for name, wc := range wcs {
		owners, err := framework.EntryManagers(wc)
		require.NoError(t, err, name)
		for _, entry := range wc.Status.VantagePoints {
			assert.Equal(t, []string{controllers.VantageFieldManager(entry.Shard)}, owners[entry.Shard], "%s: managers of the entry of %s", name, entry.Shard)
		}
	}
}
