package controllers_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// checkerSeries returns the value of every series of the metric name about
// the checker key in the test manager's registry, by their other labels
// (rendered as "label=value,..."; "" when there are none).
func checkerSeries(t *testing.T, name string, key types.NamespacedName) map[string]float64 {
	t.Helper()
	families, err := testRegistry.Gather()
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
				if l.GetName() != "namespace" && l.GetName() != "name" {
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
	assert.Equal(t, map[string]float64{"": 200}, checkerSeries(t, "webchecker_probe_http_status_code", key))
	lastRun := checkerSeries(t, "webchecker_probe_last_run_timestamp_seconds", key)[""]
	assert.InDelta(t, float64(time.Now().Unix()), lastRun, 30)
	assert.Positive(t, checkerSeries(t, "webchecker_probe_duration_seconds", key)[""])
	total := checkerSeries(t, "webchecker_probes_total", key)
	assert.GreaterOrEqual(t, total["result=success"], 1.0)
	assert.Zero(t, total["result=failure"])
	assert.Empty(t, checkerSeries(t, "webchecker_probe_ssl_earliest_cert_expiry", key), "plain HTTP has no certificate")

	target.SetStatus(http.StatusServiceUnavailable)
	require.Eventually(t, func() bool { return success()[""] == 0 }, 2*interval+2*time.Second, poll, "probe_success never became 0")
	assert.Equal(t, map[string]float64{"": 503}, checkerSeries(t, "webchecker_probe_http_status_code", key))
	assert.GreaterOrEqual(t, checkerSeries(t, "webchecker_probes_total", key)["result=failure"], 1.0)

	require.NoError(t, k8sClient.Delete(context.Background(), wc))
	require.Eventually(t, func() bool { return len(success()) == 0 }, 5*time.Second, poll, "the series outlived the checker")
	for _, name := range []string{"webchecker_probe_duration_seconds", "webchecker_probe_http_status_code", "webchecker_probe_last_run_timestamp_seconds", "webchecker_probes_total"} {
		assert.Empty(t, checkerSeries(t, name, key), name)
	}
}
