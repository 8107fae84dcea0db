package scheduler_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// fakeBuilder is a scheduler.Builder that builds checkN checks of the
// generation and version it is set to, or fails, and counts its calls.
type fakeBuilder struct {
	mu      sync.Mutex
	gen     int64
	version string
	fail    bool
	calls   map[types.NamespacedName]int
}

func newFakeBuilder() *fakeBuilder {
	return &fakeBuilder{gen: 1, version: "v1", calls: map[types.NamespacedName]int{}}
}

func (b *fakeBuilder) build(_ context.Context, key types.NamespacedName) (scheduler.Check, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[key]++
	if b.fail {
		return scheduler.Check{}, false
	}
	var i int
	for ; keyN(i) != key; i++ {
	}
	return checkN(i, b.gen, 10*time.Second, b.version), true
}

func (b *fakeBuilder) set(gen int64, version string, fail bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen, b.version, b.fail = gen, version, fail
}

func (b *fakeBuilder) callsFor(key types.NamespacedName) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[key]
}

// unbuilt is c without its target, as a replica that does not probe it
// upserts it.
func unbuilt(c scheduler.Check) scheduler.Check {
	c.Target = probing.Target{}
	return c
}

// A check held without its target is neither probed nor built while it is
// not owned, is built by the Builder at the first grid point that finds it
// owned (no Upsert in between: the hand-over waits for nothing) and probed
// there, keeps its target while owned, and loses it when disowned: owned
// again, it is built again. An Upsert that builds it, or drops its target,
// keeps its schedule and outcome.
func TestUnbuiltCheckBuiltWhenOwned(t *testing.T) {
	own := &switchOwner{}
	b := newFakeBuilder()
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Owns = own.Owns
	})
	h.s.SetBuilder(b.build)
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(unbuilt(c))
	h.start()
	for range 2 {
		h.settle()
		h.step(10 * time.Second)
	}
	h.settle()
	assert.Zero(t, h.prober.numCalls(), "not owned: not probed")
	assert.Zero(t, b.callsFor(c.Key), "not owned: not built")

	own.owns.Store(true)
	h.step(10 * time.Second)
	h.waitCalls(1)
	call := h.prober.allCalls()[0]
	assert.Equal(t, t0.Add(30*time.Second), call.At, "probed at its grid point")
	assert.Equal(t, c.Target.URL(), call.URL, "probed with the target built")
	first := h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true })

	// Kept while owned; an Upsert of the built check changes nothing.
	h.s.Upsert(c)
	h.step(10 * time.Second)
	h.waitCalls(2)
	assert.Equal(t, 1, b.callsFor(c.Key), "built once while owned")
	latest := h.waitLatest(c.Key, func(o scheduler.Outcome) bool { return o.Time.After(first.Time) })
	assert.Equal(t, 2, latest.Streak, "the Upsert kept the outcome and its streak")

	// Upserted without the target (its reconcile found it not probed
	// here): the schedule and outcome are kept until Disown.
	h.s.Upsert(unbuilt(c))
	_, ok := h.s.Latest(c.Key)
	assert.True(t, ok, "dropping the target is no new revision")
	h.s.Disown(c.Key)
	own.owns.Store(true)
	h.step(10 * time.Second)
	h.waitCalls(3)
	assert.Equal(t, 2, b.callsFor(c.Key), "built again once owned again")
	assert.Equal(t, t0.Add(50*time.Second), h.prober.allCalls()[2].At, "on its grid")
}

// A turn whose check cannot be built is skipped, as one not owned, and the
// next turn tries again.
func TestUnbuildableTurnSkipped(t *testing.T) {
	b := newFakeBuilder()
	b.set(1, "v1", true)
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	h.s.SetBuilder(b.build)
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(unbuilt(c))
	h.start()
	require.Eventually(t, func() bool { return b.callsFor(c.Key) == 1 }, waitFor, poll)
	h.settle()
	assert.Zero(t, h.prober.numCalls(), "not built: not probed")

	b.set(1, "v1", false)
	h.step(10 * time.Second)
	h.waitCalls(1)
	assert.Equal(t, t0.Add(10*time.Second), h.prober.allCalls()[0].At, "probed at the next turn")
	assert.Equal(t, 2, b.callsFor(c.Key))
}

// A check that changed since it was upserted without its target is built
// as it is now: a new revision (its first probe after the initial
// jitter), whose outcomes carry the new generation.
func TestUnbuiltCheckBuiltAsItIsNow(t *testing.T) {
	b := newFakeBuilder()
	b.set(2, "v2", false)
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	h.s.SetBuilder(b.build)
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(unbuilt(c))
	h.start()
	h.waitCalls(1)
	assert.Equal(t, urlN(0, "v2"), h.prober.allCalls()[0].URL)
	out := h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true })
	assert.Equal(t, int64(2), out.Generation)
}

// Without a Builder a check is probed with the Target it was given, the
// zero one included (the prober refuses it), and Disown keeps the target:
// owned again, it is probed without another Upsert.
func TestNoBuilderKeepsTargets(t *testing.T) {
	own := &switchOwner{}
	own.owns.Store(true)
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Owns = own.Owns
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)
	h.start()
	h.waitCalls(1)
	h.s.Disown(c.Key)
	h.step(10 * time.Second)
	h.waitCalls(2)
	assert.Equal(t, c.Target.URL(), h.prober.allCalls()[1].URL)
}

// The checks a replica does not probe hold no target: the heap of 10,000
// checks upserted without their targets, after their built targets were
// held, is smaller by at least what a target costs. Without the drop the
// targets stay referenced by the schedule.
func TestUnbuiltChecksHoldNoTarget(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures mean nothing under the race detector")
	}
	const n = 10_000
	s, err := scheduler.New(scheduler.Options{Prober: probing.ProberFunc(func(context.Context, probing.Target) probing.Result { return probing.Result{} })})
	require.NoError(t, err)
	s.SetBuilder(newFakeBuilder().build)
	keys := make([]scheduler.Check, n)
	for i := range n {
		c := checkN(i, 1, 10*time.Second, "v1")
		s.Upsert(c)
		keys[i] = unbuilt(c)
	}
	built := liveHeap()
	for _, c := range keys {
		s.Upsert(c)
	}
	dropped := liveHeap()
	perCheck := (float64(built) - float64(dropped)) / n
	t.Logf("a target held by the schedule: %.0f B per check", perCheck)
	// A checkN target holds its TargetSpec, parsed URL and transport key:
	// about 0.9 KiB.
	assert.Greater(t, perCheck, 500.0, "the targets of unbuilt checks were not dropped")
	assert.Equal(t, n, s.Len())
	runtime.KeepAlive(keys)
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
