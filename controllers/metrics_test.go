package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
)

// checkerSeries returns the value of every series of the metric name about
// the checker key in the test manager's registry, by their other labels
// but the vantage point's shard and zone (rendered as "label=value,...";
// "" when there are none).
func checkerSeries(t *testing.T, name string, key types.NamespacedName) map[string]float64 {
	t.Helper()
	return checkerSeriesBy(t, name, key, "namespace", "name", "shard", "zone")
}

// checkerSeriesBy is checkerSeries, leaving out the labels named ignored
// instead.
func checkerSeriesBy(t *testing.T, name string, key types.NamespacedName, ignored ...string) map[string]float64 {
	t.Helper()
	return gatheredSeries(t, testRegistry, name, key, ignored...)
}

// checkerSeriesIn is checkerSeries of the replica whose metrics g gathers.
func checkerSeriesIn(t *testing.T, g prometheus.Gatherer, name string, key types.NamespacedName) map[string]float64 {
	t.Helper()
	return gatheredSeries(t, g, name, key, "namespace", "name", "shard", "zone")
}

// gatheredSeries is checkerSeriesBy of the metrics g gathers.
func gatheredSeries(t *testing.T, g prometheus.Gatherer, name string, key types.NamespacedName, ignored ...string) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	series := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			rest := ""
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
				if !slices.Contains(ignored, l.GetName()) {
					rest += l.GetName() + "=" + l.GetValue()
				}
			}
			if labels["namespace"] == key.Namespace && labels["name"] == key.Name {
				series[rest] = metricValue(m)
			}
		}
	}
	return series
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return 0
}

// TestMetricsFollowTheChecker checks the per-checker metrics of the real
// wiring: they follow the target, and they are gone once the checker is.
func TestMetricsFollowTheChecker(t *testing.T) {
	t.Parallel()
	target, wc, key := startChecker(t, "metered", "/")

	success := func() map[string]float64 { return checkerSeries(t, "webchecker_probe_success", key) }
	require.Equal(t, map[string]float64{"": 1}, success())
	assert.Equal(t, map[string]float64{"shard=" + testShardID + "zone=": 1}, checkerSeriesBy(t, "webchecker_probe_success", key, "namespace", "name"),
		"the series names the vantage point: this replica, in no known zone")
	// The owner exports the Ready condition once its write returned,
	// which may be a moment after the API server shows it.
	ready := func() map[string]float64 { return checkerSeries(t, "webchecker_ready", key) }
	assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(map[string]float64{"": 1}, ready()) }, waitFor, poll,
		"the owner does not export the Ready condition")
	assert.Equal(t, map[string]float64{"": 200}, checkerSeries(t, "webchecker_probe_http_status_code", key))
	lastRun := checkerSeries(t, "webchecker_probe_last_run_timestamp_seconds", key)[""]
	assert.InDelta(t, float64(time.Now().Unix()), lastRun, 30)
	assert.Positive(t, checkerSeries(t, "webchecker_probe_duration_seconds", key)[""])
	total := checkerSeries(t, "webchecker_probes_total", key)
	assert.GreaterOrEqual(t, total["result=success"], 1.0)
	// A probe of the healthy target may still time out on a loaded
	// machine: count the failures from here.
	failures := total["result=failure"]
	assert.Empty(t, checkerSeries(t, "webchecker_probe_ssl_earliest_cert_expiry", key), "plain HTTP has no certificate")

	target.SetStatus(http.StatusServiceUnavailable)
	require.Eventually(t, func() bool { return success()[""] == 0 }, 2*interval+2*time.Second, poll, "probe_success never became 0")
	assert.Equal(t, map[string]float64{"": 503}, checkerSeries(t, "webchecker_probe_http_status_code", key))
	assert.Greater(t, checkerSeries(t, "webchecker_probes_total", key)["result=failure"], failures, "the failed probes are counted")

	require.NoError(t, k8sClient.Delete(context.Background(), wc))
	require.Eventually(t, func() bool { return len(success()) == 0 }, 5*time.Second, poll, "the series outlived the checker")
	for _, name := range []string{"webchecker_probe_duration_seconds", "webchecker_probe_http_status_code", "webchecker_probe_last_run_timestamp_seconds", "webchecker_probes_total"} {
		assert.Empty(t, checkerSeries(t, name, key), name)
	}
}

// TestSLOObjectiveFollowsTheLabel: a checker's test.network.io/slo-objective
// label becomes webchecker_slo_objective as soon as it is set or changed;
// a value that is not an objective removes the series and is reported in
// a Warning Event.
func TestSLOObjectiveFollowsTheLabel(t *testing.T) {
	t.Parallel()
	_, wc, key := startChecker(t, "objective", "/")
	assert.Empty(t, checkerSeries(t, "webchecker_slo_objective", key), "no label, no series")

	setLabel := func(value string) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, webcheckerv1alpha1.SLOObjectiveLabel, value)))
		require.NoError(t, k8sClient.Patch(context.Background(), &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, patch))
	}
	objective := func() map[string]float64 { return checkerSeries(t, "webchecker_slo_objective", key) }

	setLabel("0.999")
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(map[string]float64{"": 0.999}, objective()) }, 3*time.Second, poll, "objective: %v", objective())
	setLabel("0.95")
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(map[string]float64{"": 0.95}, objective()) }, 3*time.Second, poll, "objective: %v", objective())

	setLabel("99.9")
	require.Eventually(t, func() bool { return len(objective()) == 0 }, 3*time.Second, poll, "an invalid objective is still exported: %v", objective())
	require.Eventually(t, func() bool {
		return len(eventNotes(t, wc.Namespace, wc.Name, controllers.EventReasonInvalidSLOObjective)) > 0
	}, 5*time.Second, poll)
	assert.Contains(t, eventNotes(t, wc.Namespace, wc.Name, controllers.EventReasonInvalidSLOObjective)[0],
		`label test.network.io/slo-objective="99.9": the objective must be a number between 0 and 1 exclusive, such as 0.999; its alerts use the default objective`)
}
