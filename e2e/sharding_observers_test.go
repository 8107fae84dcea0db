package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
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
