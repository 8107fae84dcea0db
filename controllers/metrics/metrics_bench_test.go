package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// BenchmarkGather measures a scrape of a replica that owns 10,000 checkers
// (every per-checker series, webchecker_ready included, plus the
// aggregates), as the metrics server's registry gathers it.
func BenchmarkGather(b *testing.B) {
	const checkers = 10_000
	src := &fakeSources{owned: map[types.NamespacedName]bool{}, members: []string{"a", "b", "c"}, shard: "a", zone: "zone-1"}
	ready := metrics.NewReadyStates()
	for i := range checkers {
		key := types.NamespacedName{Namespace: fmt.Sprintf("team-%d", i%50), Name: fmt.Sprintf("checker-%d", i)}
		src.states = append(src.states, state(key, probing.Result{Success: i%10 != 0, StatusCode: 200, Duration: time.Duration(i) * time.Microsecond}, uint64(i), 1))
		src.owned[key] = true
		status := metav1.ConditionTrue
		if i%10 == 0 {
			status = metav1.ConditionFalse
		}
		ready.Set(key, status)
	}
	m := metrics.New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg, src, src, nil, ready); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/checkers, "ns/checker")
}

// BenchmarkProbeFinished measures what the metrics cost per probe: the
// scheduler lag, the latency and the phases of a plain HTTP probe on a new
// connection (connect, processing, transfer).
func BenchmarkProbeFinished(b *testing.B) {
	m := metrics.New()
	key := types.NamespacedName{Namespace: "team-a", Name: "checker"}
	res := probing.Result{
		Success: true, Reason: probing.ReasonSucceeded, StatusCode: 200, Duration: 3 * time.Millisecond,
		Phases: phaseTimings(map[probing.Phase]time.Duration{probing.PhaseConnect: time.Millisecond, probing.PhaseProcessing: time.Millisecond, probing.PhaseTransfer: time.Millisecond}),
	}
	b.ReportAllocs()
	for b.Loop() {
		m.ProbeStarted(key, time.Millisecond)
		m.ProbeFinished(scheduler.Outcome{Key: key, Result: res})
	}
}
