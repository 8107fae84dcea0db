package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// Settings of TestMetricsWithPrometheus.
const (
	metricsNamespace      = "e2e-metrics"
	metricsLeaseNamespace = "e2e-metrics-leases"
	metricsHealthy        = 20                                 // checkers of a target that answers 200
	metricsBroken         = 9                                  // checkers of a target that answers 500
	metricsCheckers       = metricsHealthy + metricsBroken + 1 // and one that breaks during the test
	metricsInterval       = 2 * time.Second
	metricsLeaseDuration  = 5 * time.Second
	scrapeInterval        = time.Second

	// flakyDownWithin: the checker whose target breaks shows
	// probe_success 0 in Prometheus, from the break.
	flakyDownWithin = 2 * metricsInterval
	// convergedWithin: Prometheus sees every checker exactly once, from
	// the last creation or from a replica's crash. A crash needs the Lease
	// to expire, a probe by the new owner and a scrape.
	convergedWithin = metricsLeaseDuration + metricsInterval + 2*scrapeInterval + 5*time.Second
)

// TestMetricsWithPrometheus runs three manager processes and a real
// Prometheus server that scrapes them every second, and checks what a user
// of the metrics sees: every checker exactly once across the replicas, with
// the right value, also after a replica crashed and its checkers moved;
// the latency histograms answer quantile queries; and the exposition
// passes `promtool check metrics`.
func TestMetricsWithPrometheus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := testClient(t, ctx, metricsNamespace, metricsLeaseNamespace)

	healthy, broken, flaky := probetest.NewTarget(), probetest.NewTarget(), probetest.NewTarget()
	for _, target := range []*probetest.Target{healthy, broken, flaky} {
		defer target.Close()
	}
	broken.SetStatus(http.StatusInternalServerError)

	fleet, err := framework.StartFleet(ctx, metricsFleetOptions(t, "metrics"))
	require.NoError(t, err)
	defer fleet.Stop()
	defer func() {
		if t.Failed() {
			t.Log(fleet.Logs(40))
		}
	}()
	replicas, prom := fleet.Replicas, fleet.Prometheus

	// The checkers.
	create := func(name string, target *probetest.Target) {
		require.NoError(t, c.Create(ctx, &webcheckerv1alpha1.WebChecker{
			ObjectMeta: metav1.ObjectMeta{Namespace: metricsNamespace, Name: name},
			Spec: webcheckerv1alpha1.WebCheckerSpec{
				Host:     target.URL(),
				Path:     "/" + name,
				Interval: &metav1.Duration{Duration: metricsInterval},
				Timeout:  &metav1.Duration{Duration: time.Second},
			},
		}))
	}
	for i := range metricsHealthy {
		create(fmt.Sprintf("healthy-%02d", i), healthy)
	}
	for i := range metricsBroken {
		create(fmt.Sprintf("broken-%02d", i), broken)
	}
	create("flaky", flaky)
	created := time.Now()

	scalar := func(expr string) float64 {
		t.Helper()
		v, ok, err := prom.Scalar(ctx, expr)
		require.NoError(t, err)
		require.True(t, ok, "%s: no result", expr)
		return v
	}
	// converged: every checker has exactly one probe_success series, and
	// sum says how many are healthy.
	const (
		countExpr      = `count(webchecker_probe_success{namespace="` + metricsNamespace + `"})`
		sumExpr        = `sum(webchecker_probe_success{namespace="` + metricsNamespace + `"})`
		duplicatesExpr = `count by (namespace, name) (webchecker_probe_success{namespace="` + metricsNamespace + `"}) > 1`
	)
	converged := func(wantHealthy int) func() bool {
		return func() bool {
			count, okCount, err1 := prom.Scalar(ctx, countExpr)
			sum, okSum, err2 := prom.Scalar(ctx, sumExpr)
			return err1 == nil && err2 == nil && okCount && okSum && count == metricsCheckers && sum == float64(wantHealthy)
		}
	}
	noDuplicates := func(when string) {
		t.Helper()
		dups, err := prom.Query(ctx, duplicatesExpr)
		require.NoError(t, err)
		assert.Empty(t, dups, "%s: checkers exported by more than one replica", when)
	}

	// ---------------------------------------------------------------
	// 1. Convergence.
	require.Eventually(t, converged(metricsHealthy+1), convergedWithin, 200*time.Millisecond,
		"never converged: count=%v sum=%v", scalarOr(prom, countExpr), scalarOr(prom, sumExpr))
	t.Logf("all %d checkers in Prometheus, %d healthy, %s after the last creation", metricsCheckers, metricsHealthy+1, time.Since(created).Round(100*time.Millisecond))
	noDuplicates("after convergence")
	// The replicas serve every namespace, including checkers other tests
	// left behind.
	allCheckers := func() float64 {
		var list webcheckerv1alpha1.WebCheckerList
		require.NoError(t, c.List(ctx, &list))
		return float64(len(list.Items))
	}
	assert.Equal(t, allCheckers(), scalar(`sum(webchecker_shard_owned_checkers)`), "owned checkers over all replicas")
	assert.Equal(t, float64(3), scalar(`min(webchecker_shard_members)`), "every replica sees three members")
	assert.Equal(t, float64(metricsBroken), scalar(`count(webchecker_probe_http_status_code{namespace="`+metricsNamespace+`"} == 500)`))
	assert.GreaterOrEqual(t, scalar(`sum(webchecker_status_writes_total{result="success"})`), float64(metricsCheckers), "at least one status write per checker")

	// ---------------------------------------------------------------
	// 2. The exposition of a real scrape passes promtool.
	t.Run("promtool check metrics", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		require.NoError(t, err, "promtool comes with Debian's prometheus package (make debian-tools)")
		resp, err := http.Get("http://" + replicas[0].MetricsAddr + "/metrics")
		require.NoError(t, err)
		exposition, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.Contains(t, string(exposition), "webchecker_probe_success{")
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(string(exposition))
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "promtool check metrics:\n%s", out)
		assert.Empty(t, strings.TrimSpace(string(out)), "promtool check metrics reported problems")
	})

	// ---------------------------------------------------------------
	// 3. A target breaks: its checker shows 0 within two intervals.
	flaky.SetStatus(http.StatusServiceUnavailable)
	broke := time.Now()
	flakyExpr := `webchecker_probe_success{namespace="` + metricsNamespace + `",name="flaky"}`
	require.Eventually(t, func() bool {
		v, ok, err := prom.Scalar(ctx, flakyExpr)
		return err == nil && ok && v == 0
	}, flakyDownWithin, 100*time.Millisecond, "flaky still %v", scalarOr(prom, flakyExpr))
	t.Logf("flaky target broken -> probe_success 0 in Prometheus after %s (limit %s)", time.Since(broke).Round(100*time.Millisecond), flakyDownWithin)
	require.Eventually(t, converged(metricsHealthy), convergedWithin, 200*time.Millisecond)

	// ---------------------------------------------------------------
	// 4. A replica crashes: its checkers move, and are counted exactly
	// once again once the survivors took them over.
	victim := replicas[1]
	owned := scalar(`webchecker_shard_owned_checkers{instance="` + victim.MetricsAddr + `"}`)
	require.NoError(t, victim.Kill())
	killed := time.Now()
	t.Logf("killed %s, which owned %v checkers", victim.Options.ShardID, owned)
	require.Eventually(t, func() bool {
		members, ok, err := prom.Scalar(ctx, `max(webchecker_shard_members)`)
		return err == nil && ok && members == 2 && converged(metricsHealthy)()
	}, convergedWithin, 200*time.Millisecond, "never converged after the crash: count=%v sum=%v", scalarOr(prom, countExpr), scalarOr(prom, sumExpr))
	t.Logf("after the crash all %d checkers counted once again after %s", metricsCheckers, time.Since(killed).Round(100*time.Millisecond))
	// And it stays exact: sample a few scrapes.
	for range 4 {
		assert.True(t, converged(metricsHealthy)(), "count=%v sum=%v", scalarOr(prom, countExpr), scalarOr(prom, sumExpr))
		noDuplicates("after the crash")
		time.Sleep(scrapeInterval)
	}
	assert.Equal(t, allCheckers(), scalar(`sum(webchecker_shard_owned_checkers)`), "owned checkers over the survivors")

	// ---------------------------------------------------------------
	// 5. The aggregates answer the questions dashboards ask.
	p90 := scalar(`histogram_quantile(0.9, sum by (le) (rate(webchecker_probe_latency_seconds_bucket{result="success"}[30s])))`)
	t.Logf("p90 probe latency of successful probes: %.4fs", p90)
	assert.Greater(t, p90, 0.0)
	assert.Less(t, p90, 1.0, "loopback probes with a 1s timeout")
	// Totals, not rates: connections are kept alive, so connect happens
	// only now and then.
	phases, err := prom.Query(ctx, `sum by (phase) (webchecker_probe_phase_seconds_count) > 0`)
	require.NoError(t, err)
	var seen []string
	for _, s := range phases {
		seen = append(seen, string(s.Metric["phase"]))
	}
	assert.Subset(t, seen, []string{"connect", "processing", "transfer"}, "phases measured")
	lag := scalar(`histogram_quantile(0.99, sum by (le) (rate(webchecker_scheduler_lag_seconds_bucket[30s])))`)
	t.Logf("p99 scheduler lag: %.4fs", lag)
	assert.Less(t, lag, 1.0)
}

// metricsFleetOptions are the options of the fleet of TestMetricsWithPrometheus:
// three replicas (shard ids <name>-0..2) on a ring of their own, with their
// Leases in metricsLeaseNamespace, scraped every scrapeInterval.
func metricsFleetOptions(t *testing.T, name string) framework.FleetOptions {
	return framework.FleetOptions{
		Name:     name,
		Replicas: 3,
		Manager: framework.ManagerOptions{
			Binary: managerPath, Kubeconfig: cp.KubeconfigPath, DNSServer: dns.Addr(),
			Args: []string{
				"--lease-namespace=" + metricsLeaseNamespace,
				"--ring-name=" + fmt.Sprintf("e2e-%s-%d", name, time.Now().UnixNano()),
				"--lease-duration=" + metricsLeaseDuration.String(),
				"--lease-renew-interval=1s",
			},
		},
		Prometheus: framework.PrometheusOptions{Dir: t.TempDir(), ScrapeInterval: scrapeInterval},
	}
}

// scalarOr returns the value of expr for a failure message.
func scalarOr(prom *framework.Prometheus, expr string) string {
	v, ok, err := prom.Scalar(context.Background(), expr)
	switch {
	case err != nil:
		return err.Error()
	case !ok:
		return "(none)"
	}
	return fmt.Sprint(v)
}
