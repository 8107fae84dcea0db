package metrics_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Expositions of the series TestVantagePointMetrics compares, for keyA
// labelled team=payments with its own objective.
const (
	readyHeader = `# HELP webchecker_ready Quorum state of the checker: 1 while its Ready condition is True, 0 while it is False (with spec.vantagePoints above 1, as the majority of its vantage points see it, after the checker's thresholds or failure window); absent while it is Unknown. Exported only by the replica that owns the checker.
# TYPE webchecker_ready gauge
`
	objectiveSeries = `# HELP webchecker_slo_objective Availability objective of the checker (the share of its probes that must succeed over 30 days), from its test.network.io/slo-objective label; absent without one, when the chart's rules use their default. Exported only by the replica that owns the checker.
# TYPE webchecker_slo_objective gauge
webchecker_slo_objective{label_team="payments",name="payments",namespace="shop"} 0.999
`
	ownedHeader = `# HELP webchecker_shard_owned_checkers WebCheckers this replica owns: it writes their status, and probes them.
# TYPE webchecker_shard_owned_checkers gauge
`
	probedHeader = `# HELP webchecker_shard_probed_checkers WebCheckers this replica probes as one of their vantage points, those it owns included.
# TYPE webchecker_shard_probed_checkers gauge
`
)

// TestVantagePointMetrics checks what a replica exports of a checker with
// three vantage points by its role: every vantage point (owner or not)
// exports the probe series, labelled with its shard and zone; only the
// owner exports the objective and the quorum state (webchecker_ready), 1
// or 0 while Ready is True or False and nothing while it is Unknown; a
// replica that is fenced, or no vantage point, exports nothing of it.
func TestVantagePointMetrics(t *testing.T) {
	probeSeries := func(shard, zone string) string {
		return strings.TrimPrefix(checkerHeader, "\n") +
			fmt.Sprintf(`webchecker_probe_success{label_team="payments",name="payments",namespace="shop",shard=%q,zone=%q} 0`+"\n", shard, zone)
	}
	gauges := func(owned, probed int) string {
		return fmt.Sprintf("%swebchecker_shard_owned_checkers %d\n%swebchecker_shard_probed_checkers %d\n", ownedHeader, owned, probedHeader, probed)
	}
	tests := map[string]struct {
		owner, vantagePoint, fenced bool
		zone                        string
		ready                       metav1.ConditionStatus // "": never set
		want                        string
	}{
		"owner, Ready True": {
			owner: true, vantagePoint: true, zone: "zone-1", ready: metav1.ConditionTrue,
			want: probeSeries("b", "zone-1") + readyHeader + `webchecker_ready{label_team="payments",name="payments",namespace="shop"} 1` + "\n" + objectiveSeries + gauges(1, 1),
		},
		"owner, Ready False": {
			owner: true, vantagePoint: true, zone: "zone-1", ready: metav1.ConditionFalse,
			want: probeSeries("b", "zone-1") + readyHeader + `webchecker_ready{label_team="payments",name="payments",namespace="shop"} 0` + "\n" + objectiveSeries + gauges(1, 1),
		},
		"owner, Ready Unknown": {
			owner: true, vantagePoint: true, zone: "zone-1", ready: metav1.ConditionUnknown,
			want: probeSeries("b", "zone-1") + objectiveSeries + gauges(1, 1),
		},
		"owner, Ready not known yet": {
			owner: true, vantagePoint: true, zone: "zone-1",
			want: probeSeries("b", "zone-1") + objectiveSeries + gauges(1, 1),
		},
		"vantage point, not owner": {
			vantagePoint: true, zone: "zone-2", ready: metav1.ConditionTrue,
			want: probeSeries("b", "zone-2") + gauges(0, 1),
		},
		"vantage point in an unknown zone": {
			vantagePoint: true, ready: metav1.ConditionFalse,
			want: probeSeries("b", "") + gauges(0, 1),
		},
		"not a vantage point": {
			zone: "zone-1", ready: metav1.ConditionTrue,
			want: gauges(0, 0),
		},
		"fenced owner": {
			owner: true, vantagePoint: true, fenced: true, zone: "zone-1", ready: metav1.ConditionTrue,
			want: gauges(0, 0),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			labels, err := metrics.NewCheckerLabels([]string{"team"})
			require.NoError(t, err)
			labels.Set(keyA, map[string]string{"team": "payments", webcheckerv1alpha1.SLOObjectiveLabel: "0.999"})
			ready := metrics.NewReadyStates()
			if tc.ready != "" {
				ready.Set(keyA, tc.ready)
			}
			st := state(keyA, probing.Result{Reason: probing.ReasonTimeout, Duration: time.Second}, 2, 1)
			st.VantagePoints = 3
			src := &fakeSources{
				states: []scheduler.CheckState{st},
				owned:  map[types.NamespacedName]bool{keyA: tc.owner},
				probed: map[types.NamespacedName]bool{keyA: tc.vantagePoint},
				fenced: tc.fenced, shard: "b", zone: tc.zone,
			}
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, metrics.New().Register(reg, src, src, labels, ready))
			assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(tc.want), "webchecker_probe_success", "webchecker_ready",
				"webchecker_slo_objective", "webchecker_shard_owned_checkers", "webchecker_shard_probed_checkers"))
			assert.Equal(t, 3, src.asked[keyA], "Probes is asked with the check's vantage points")

			var probeSeries int
			if tc.vantagePoint && !tc.fenced {
				probeSeries = 6 // success, duration, status code, last run, probes_total x2
			}
			assert.Equal(t, probeSeries, testutil.CollectAndCount(reg, "webchecker_probe_success", "webchecker_probe_duration_seconds",
				"webchecker_probe_http_status_code", "webchecker_probe_last_run_timestamp_seconds", "webchecker_probes_total"), "every probe series or none")
		})
	}
}

// TestReadyFollowsSetAndDelete: webchecker_ready follows the states the
// reconciler sets, the ownership at scrape time and the scheduler; without
// a ReadyStates there is none.
func TestReadyFollowsSetAndDelete(t *testing.T) {
	ready := metrics.NewReadyStates()
	src := &fakeSources{
		states: []scheduler.CheckState{{Key: keyA}, {Key: keyB, VantagePoints: 0}},
		owned:  map[types.NamespacedName]bool{keyA: true, keyB: true},
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, metrics.New().Register(reg, src, src, nil, ready))
	series := func(values ...string) string {
		if len(values) == 0 {
			return ""
		}
		out := readyHeader
		for i := 0; i < len(values); i += 2 {
			out += `webchecker_ready{name="` + values[i] + `",namespace="shop"} ` + values[i+1] + "\n"
		}
		return out
	}
	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{name: "nothing set", change: func() {}, want: series()},
		{name: "True before any probe", change: func() { ready.Set(keyA, metav1.ConditionTrue) }, want: series("payments", "1")},
		{name: "False", change: func() { ready.Set(keyB, metav1.ConditionFalse) }, want: series("payments", "1", "search", "0")},
		{name: "Unknown: absent", change: func() { ready.Set(keyA, metav1.ConditionUnknown) }, want: series("search", "0")},
		{name: "moved to another replica", change: func() { src.set(func(f *fakeSources) { f.owned[keyB] = false }) }, want: series()},
		{name: "given back", change: func() { src.set(func(f *fakeSources) { f.owned[keyB] = true }) }, want: series("search", "0")},
		{name: "removed from the scheduler", change: func() { src.set(func(f *fakeSources) { f.states = f.states[:1] }) }, want: series()},
		{name: "deleted", change: func() { ready.Set(keyA, metav1.ConditionTrue); ready.Delete(keyA) }, want: series()},
	}
	for _, step := range steps {
		step.change()
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(step.want), "webchecker_ready"), step.name)
	}
	assert.Equal(t, 1, ready.Len(), "keyB's False is kept, though no longer scheduled")
	assert.Equal(t, 1, src.asked[keyA], "vantage points below 1 mean 1")

	var none *metrics.ReadyStates
	none.Set(keyA, metav1.ConditionTrue)
	none.Delete(keyA)
	assert.Zero(t, none.Len())
	reg = prometheus.NewPedanticRegistry()
	require.NoError(t, metrics.New().Register(reg, src, src, nil, nil))
	assert.Zero(t, testutil.CollectAndCount(reg, "webchecker_ready"), "no ReadyStates, no webchecker_ready")
}

// TestReadyStatesConcurrentUse sets states while the registry gathers
// (run with -race).
func TestReadyStatesConcurrentUse(t *testing.T) {
	ready := metrics.NewReadyStates()
	src := &fakeSources{owned: map[types.NamespacedName]bool{}}
	for i := range 100 {
		key := types.NamespacedName{Namespace: "shop", Name: fmt.Sprint("checker-", i)}
		src.states = append(src.states, scheduler.CheckState{Key: key})
		src.owned[key] = true
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, metrics.New().Register(reg, src, src, nil, ready))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				key := src.states[(i*7+w)%len(src.states)].Key
				switch i % 3 {
				case 0:
					ready.Set(key, metav1.ConditionTrue)
				case 1:
					ready.Set(key, metav1.ConditionFalse)
				default:
					ready.Delete(key)
				}
			}
		})
	}
	for range 20 {
		_, err := reg.Gather()
		require.NoError(t, err)
	}
	wg.Wait()
	assert.Equal(t, ready.Len(), testutil.CollectAndCount(reg, "webchecker_ready"), "every known state of an owned checker is exported")
}
