package e2e_test

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/sharding/ring"
)

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
	for _, ev := range e.rec.Snapshot() {
		if ev.Shard == "" || ev.At.After(end) {
			continue // the creation, or after the observation
		}
		key := ring.Key(e.ns, ev.Name)
		allowed := map[string]bool{e.ring(e.ringAt(ev.At)).Owner(key): true}
		grace := false
		for _, c := range e.changes {
			if !ev.At.Before(c.start) && !ev.At.After(c.graceEnd()) {
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
		switch died, isDead := e.dead[ev.Shard]; {
		case isDead && ev.At.After(died.Add(deadWriteSlack)):
			bad = append(bad, fmt.Sprintf("%s rv=%s written by %s at %s, %s after it was stopped",
				ev.Name, ev.RV, ev.Shard, ev.At.Format("15:04:05.000"), ev.At.Sub(died).Round(time.Millisecond)))
		case !allowed[ev.Shard]:
			bad = append(bad, fmt.Sprintf("%s rv=%s written by %s at %s (grace=%t), allowed %v",
				ev.Name, ev.RV, ev.Shard, ev.At.Format("15:04:05.000"), grace, slices.Sorted(maps.Keys(allowed))))
		}
	}
	assert.Empty(e.t, bad, "status writes by a replica that did not own the checker")
	e.t.Logf("status writes checked: %d outside grace periods (writer must be the ring owner), %d within (old or new owner); %d by a non-owner",
		outside, inGrace, len(bad))
	assert.Positive(e.t, outside)
	if errs := e.rec.Errors(); len(errs) > 0 {
		assert.Fail(e.t, "the status watch was interrupted; writes may be missing", "%v", errs)
	}
}

// checkReadyNeverLost checks that, once every checker was Ready, no status
// write made one of them anything but Ready (the target always answered
// 200): a takeover must not reset a checker's condition.
func (e *shardingEnv) checkReadyNeverLost(allReady, end time.Time) {
	e.t.Helper()
	var lost []string
	for _, ev := range e.rec.Snapshot() {
		if ev.At.After(allReady) && !ev.At.After(end) && ev.Ready != metav1.ConditionTrue {
			lost = append(lost, fmt.Sprintf("%s rv=%s at %s by %s: Ready=%q", ev.Name, ev.RV, ev.At.Format("15:04:05.000"), ev.Shard, ev.Ready))
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
	target *probetest.Target
	total  int
	byPath map[string][]probeHit // in arrival order
}

func newHitIndex(target *probetest.Target) *hitIndex {
	return &hitIndex{target: target, byPath: map[string][]probeHit{}}
}

// sync reads the hits received since the last sync.
func (h *hitIndex) sync() {
	hits := h.target.HitsSince(h.total)
	h.total += len(hits)
	for _, hit := range hits {
		ua := hit.Header.Get("User-Agent")
		shard, ok := framework.ShardOfUserAgent(ua)
		if !ok {
			shard = "?" + ua
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
