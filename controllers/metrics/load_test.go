package metrics_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// loadFamilies are the series of how the scheduler keeps up.
var loadFamilies = []string{
	"webchecker_scheduler_memory_budget_bytes", "webchecker_scheduler_inflight_bytes", "webchecker_scheduler_workers",
	"webchecker_scheduler_saturated", "webchecker_scheduler_skipped_turns_total", "webchecker_scheduler_delayed_turns_total",
}

const loadHeader = `
# HELP webchecker_scheduler_delayed_turns_total Turns of checkers started late, by reason: bound (waited for the bound on probes in flight), namespace (waited for the namespace's share of it), late (started more than 1s after due otherwise).
# TYPE webchecker_scheduler_delayed_turns_total counter
`

// loadExposition is what a scrape shows of l.
func loadExposition(l scheduler.Load) string {
	return loadHeader + strings.NewReplacer(
		"BOUND", itoa(l.WaitedTurns), "NAMESPACE", itoa(l.SetAsideTurns), "LATE", itoa(l.LateTurns),
		"HELD", itoa(uint64(l.InFlightBytes)), "BUDGET", itoa(uint64(l.MemoryBudget)), "WORKERS", itoa(uint64(l.Workers)),
		"SATURATED", map[bool]string{true: "1", false: "0"}[l.Saturated], "SKIPPED", itoa(l.SkippedTurns),
	).Replace(`webchecker_scheduler_delayed_turns_total{reason="bound"} BOUND
webchecker_scheduler_delayed_turns_total{reason="late"} LATE
webchecker_scheduler_delayed_turns_total{reason="namespace"} NAMESPACE
# HELP webchecker_scheduler_inflight_bytes Bytes of webchecker_scheduler_memory_budget_bytes the probes running now hold.
# TYPE webchecker_scheduler_inflight_bytes gauge
webchecker_scheduler_inflight_bytes HELD
# HELP webchecker_scheduler_memory_budget_bytes Bytes the probes in flight of this replica may hold at once: a quarter of GOMEMLIMIT, 64 MiB when it is unset; each probe holds what its kind costs (24 KiB for http, 76 KiB for https, up to 152 KiB for grpcs).
# TYPE webchecker_scheduler_memory_budget_bytes gauge
webchecker_scheduler_memory_budget_bytes BUDGET
# HELP webchecker_scheduler_saturated 1 while a due probe waits because the probes in flight hold all the bound allows (the memory budget, or --probe-workers): the replica cannot keep up; 0 otherwise.
# TYPE webchecker_scheduler_saturated gauge
webchecker_scheduler_saturated SATURATED
# HELP webchecker_scheduler_skipped_turns_total Turns of checkers not probed because their previous probe still ran: probes that take longer than their interval allows.
# TYPE webchecker_scheduler_skipped_turns_total counter
webchecker_scheduler_skipped_turns_total SKIPPED
# HELP webchecker_scheduler_workers The bound on the number of probes in flight (--probe-workers); 0 when only the memory budget bounds them.
# TYPE webchecker_scheduler_workers gauge
webchecker_scheduler_workers WORKERS
`)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestSchedulerLoadMetrics: what the scheduler tells of its bound and of
// the turns it could not keep is exported at every scrape, as it is then.
func TestSchedulerLoadMetrics(t *testing.T) {
	tests := map[string]scheduler.Load{
		"idle, memory only": {MemoryBudget: 64 << 20},
		"keeping up":        {MemoryBudget: 64 << 20, InFlight: 300, InFlightBytes: 300 * 24 << 10},
		"cannot keep up": {MemoryBudget: 8 << 20, Workers: 100, InFlight: 100, InFlightBytes: 100 * 76 << 10, Saturated: true,
			SkippedTurns: 3, WaitedTurns: 41, SetAsideTurns: 7, LateTurns: 2},
	}
	for name, load := range tests {
		t.Run(name, func(t *testing.T) {
			_, src, reg := newRegistered(t)
			src.set(func(f *fakeSources) { f.load = load })
			require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(loadExposition(load)), loadFamilies...))
		})
	}
}

// TestSaturationExportedFromTheScheduler: a real scheduler bounded to one
// probe in flight, whose probes hang, exports nothing late while one
// probe is due, and its saturation and the turn that waited for the bound
// once a second is due.
func TestSaturationExportedFromTheScheduler(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	s, err := scheduler.New(scheduler.Options{
		Prober: probing.ProberFunc(func(ctx context.Context, _ probing.Target) probing.Result {
			select {
			case <-hang:
			case <-ctx.Done():
			}
			return probing.Result{}
		}),
		Workers:       1,
		InitialJitter: -1, // due at once
	})
	require.NoError(t, err)
	src := &fakeSources{}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, metrics.New().Register(reg, s, src, nil, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// Two namespaces: each may hold its share of the bound (one probe),
	// and the second waits for the bound itself.
	check := func(namespace string) scheduler.Check {
		target, err := probing.NewTarget(probing.TargetSpec{URL: "http://" + namespace + ".example/", Method: "GET", Timeout: time.Hour})
		require.NoError(t, err)
		return scheduler.Check{Key: types.NamespacedName{Namespace: namespace, Name: "checker"}, Interval: time.Hour, Target: target}
	}
	s.Upsert(check("shop"))
	require.Eventually(t, func() bool { return s.InFlight() == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(loadExposition(scheduler.Load{
		MemoryBudget: scheduler.DefaultMemoryBudget, Workers: 1, InFlightBytes: 24 << 10,
	})), loadFamilies...), "at the bound: nothing waits")

	s.Upsert(check("blog"))
	require.Eventually(t, func() bool { return s.Load().Saturated }, 10*time.Second, time.Millisecond)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(loadExposition(scheduler.Load{
		MemoryBudget: scheduler.DefaultMemoryBudget, Workers: 1, InFlightBytes: 24 << 10, Saturated: true, WaitedTurns: 1,
	})), loadFamilies...), "over the bound: saturated, one turn waits")
	assert.Equal(t, 1, s.InFlight(), "the bound holds")
}
