package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
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
	// quorumFailureThreshold is the failureThreshold of the checker whose
	// target fails: each vantage point needs that many failures.
	quorumFailureThreshold = 2
	// quorumFailsWithin: a target that really fails turns Ready False, from
	// its first failing answer.
	quorumFailsWithin = quorumInterval*quorumFailureThreshold + 2*time.Second
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

	denied, err := probetest.NewTargetAt(quorumDeniedIP)
	require.NoError(t, err)
	t.Cleanup(denied.Close)
	healthy := probetest.NewTarget()
	t.Cleanup(healthy.Close)
	failing := probetest.NewTarget()
	t.Cleanup(failing.Close)

	alone := e.nameOwnedBy("alone", "quorum-c")
	e.create("quorum", denied.URL(), 3)
	e.create(alone, denied.URL(), 1)
	e.createWith("fails", failing.URL(), 3, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.FailureThreshold = ptr.To[int32](quorumFailureThreshold) })
	var steady []string
	for i := range quorumSteadyCheckers {
		steady = append(steady, fmt.Sprintf("steady-%03d", i))
	}
	e.createAll(steady, healthy.URL(), 3)

	e.checkDecided(t, alone)
	e.checkSteadyMinute(t)

	// A target that really fails: Ready False within interval ×
	// failureThreshold + 2 s.
	failed := time.Now()
	failing.SetStatus(503)
	e.waitFor(t, "fails turns Ready False", quorumFailsWithin, func(wcs map[string]*webcheckerv1alpha1.WebChecker) string {
		if c := framework.ReadyCondition(wcs["fails"]); c.Status != metav1.ConditionFalse {
			return "fails: Ready " + string(c.Status) + ": " + c.Message
		}
		return ""
	})
	t.Logf("a failing target turned Ready False %s after it failed (limit %s)", time.Since(failed).Round(time.Millisecond), quorumFailsWithin)

	e.checkKillReforms(t, "quorum-b", steady, healthy)
}

// checkDecided waits until every checker is decided, with an entry per
// vantage point, and checks the checker of the denied target: Ready True,
// 2 of 3, the zone-c replica's entry False EgressDenied, while the one
// with that replica alone (alone) is False.
func (e *quorumEnv) checkDecided(t *testing.T, alone string) {
	created := time.Now()
	e.waitFor(t, "every checker decided, every entry written", 60*time.Second, func(wcs map[string]*webcheckerv1alpha1.WebChecker) string {
		for name, wc := range wcs {
			want := metav1.ConditionTrue
			if name == alone {
				want = metav1.ConditionFalse
			}
			if got := framework.ReadyCondition(wc).Status; got != want {
				return fmt.Sprintf("%s: Ready %s, want %s", name, got, want)
			}
			if k := ptr.Deref(wc.Spec.VantagePoints, 1); k > 1 && len(wc.Status.VantagePoints) != int(k) {
				return fmt.Sprintf("%s: %d entries", name, len(wc.Status.VantagePoints))
			}
		}
		return ""
	})
	wcs := e.list()
	t.Logf("%d checkers decided %s after the last creation", len(wcs), time.Since(created).Round(time.Millisecond))
	q := wcs["quorum"]
	assert.True(t, strings.HasPrefix(framework.ReadyCondition(q).Message, "2 of 3 vantage points succeed ("), framework.ReadyCondition(q).Message)
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
	assert.Equal(t, "EgressDenied", framework.ReadyCondition(wcs[alone]).Reason, "one vantage point in zone c: its probes decide")
	assertEntriesWrittenByTheirShards(t, wcs)
}

// checkSteadyMinute checks that nothing is written in a steady minute.
func (e *quorumEnv) checkSteadyMinute(t *testing.T) {
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
}

// checkKillReforms kills victim with SIGKILL: every set of the steady
// checkers (probed on target) it was in gets a new member, which probes
// the checker within lease duration + interval + 2 s (its requests carry
// its shard id); the statuses follow at the pace of the replicas' writes.
func (e *quorumEnv) checkKillReforms(t *testing.T, victim string, steady []string, target *probetest.Target) {
	oldSets := map[string][]string{}
	for _, name := range steady {
		oldSets[name] = e.expectedSet(name, 3)
	}
	killed := time.Now()
	require.NoError(t, e.managers[victim].Kill())
	delete(e.zones, victim)
	newcomers := map[string]string{} // checker path -> its new vantage point
	for _, name := range steady {
		for _, shard := range e.expectedSet(name, 3) {
			if !slices.Contains(oldSets[name], shard) {
				newcomers["/"+name] = shard
			}
		}
	}
	require.NotEmpty(t, newcomers)
	probed := func() map[string]time.Time { return firstProbes(target, newcomers, killed) }
	require.True(t, poll(quorumReformedWithin+time.Second, 250*time.Millisecond, func() bool { return len(probed()) == len(newcomers) }),
		"%d of %d re-formed sets probed by their new member", len(probed()), len(newcomers))
	var slowest time.Duration
	var late []string
	for path, at := range probed() {
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
			if k := int(ptr.Deref(wc.Spec.VantagePoints, 1)); k > 1 {
				if want, got := e.expectedSet(name, k), shardsOf(wc.Status.VantagePoints); !slices.Equal(want, got) {
					wrong = append(wrong, fmt.Sprintf("%s: entries %v, want %v", name, got, want))
				}
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

// firstProbes returns, for each path of newcomers received by target after
// since from the shard newcomers names, when it first came.
func firstProbes(target *probetest.Target, newcomers map[string]string, since time.Time) map[string]time.Time {
	first := map[string]time.Time{}
	for _, hit := range target.Hits() {
		shard, ok := newcomers[hit.Path]
		if !ok || !hit.Time.After(since) || hit.Header.Get("User-Agent") != "webchecker (shard "+shard+")" {
			continue
		}
		if _, seen := first[hit.Path]; !seen {
			first[hit.Path] = hit.Time
		}
	}
	return first
}
