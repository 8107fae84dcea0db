package chart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/chart"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// Settings of TestChartPromQLAgainstPrometheus.
const (
	promqlNamespace      = "promql"
	promqlLeaseNamespace = "promql-leases"
	promqlInterval       = 2 * time.Second
	promqlScrapeInterval = time.Second
	// promqlDependency is the broken checker the dependents depend on,
	// and promqlMaintained a broken checker in an open maintenance
	// window.
	promqlDependency = "broken-0"
	promqlMaintained = "maintained-0"
	// promqlClientCert is the kubernetes.io/tls Secret of the https
	// checker's client certificate.
	promqlClientCert = "promql-client"
)

// promqlDependents depend on promqlDependency and fail too (the same
// broken target): six, so that the ring gives some of them to another
// replica than the dependency's.
var promqlDependents = []string{"dependent-0", "dependent-1", "dependent-2", "dependent-3", "dependent-4", "dependent-5"}

// promqlVariables replace the dashboards' template variables: the checker
// variables name the checker of the test probed from three vantage points,
// the replica variable matches every replica, and Grafana's intervals are
// windows that hold a few scrapes.
var promqlVariables = strings.NewReplacer(
	"$namespace", promqlNamespace,
	"$name", "quorum-0",
	"$instance", ".*",
	"$__rate_interval", "30s",
	"$__range", "1m",
	"$__interval", "10s",
)

// labelValuesQuery is a Grafana query variable: label_values(<selector>, <label>).
var labelValuesQuery = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// promqlExpression is one PromQL expression the chart ships, and where.
type promqlExpression struct {
	source string // e.g. "rule WebCheckerDown", "webchecker-fleet.json: Checkers up"
	expr   string
	// wantData: the expression must return samples (a recording rule over
	// checkers that exist; WebCheckerDown with a broken checker).
	wantData bool
}

// TestChartPromQLAgainstPrometheus runs every PromQL expression of the
// chart, those of its PrometheusRule (every group and optional rule on) and
// of its Grafana dashboards, against the real Prometheus of the metrics
// end-to-end test (framework.StartFleet: three manager replicas, scraped
// every second, here also evaluating the chart's rules) once it has scraped
// healthy, broken and https checkers, and one probed from three vantage
// points: each must run, and every metric it names must have a series, so
// that an expression naming a metric that does not exist (a typo, or a
// metric no code exports) fails.
//
// On the same fleet it checks a dependency across replicas and the alerts
// on what the replicas really export: dependents of broken-0, some owned
// by another replica than broken-0's, read Ready False with reason
// DependencyDown naming it; and the chart's rules, run by promtool on two
// scrapes of the replicas (testRulesOnExportedSeries), page for broken-0
// and neither for its dependents nor for a broken checker in an open
// maintenance window.
func TestChartPromQLAgainstPrometheus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := framework.StartControlPlane()
	require.NoError(t, err)
	defer func() { assert.NoError(t, cluster.Stop()) }()
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	for _, ns := range []string{promqlNamespace, promqlLeaseNamespace} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}

	// The chart's rules, as Prometheus loads a PrometheusRule's spec, the
	// optional WebCheckerDownFromZones included.
	dir := t.TempDir()
	spec := renderedRules(t, downFromZonesValues(nil))
	rules, err := yaml.Marshal(spec)
	require.NoError(t, err)
	rulesPath := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(rulesPath, rules, 0o600))

	fleet, err := framework.StartFleet(ctx, framework.FleetOptions{
		Name:     "promql",
		Replicas: 3,
		Manager: framework.ManagerOptions{
			Binary: managerPath, Kubeconfig: cluster.KubeconfigPath, DNSServer: dns.Addr(),
			Args: []string{"--lease-namespace=" + promqlLeaseNamespace, "--lease-duration=5s", "--lease-renew-interval=1s"},
		},
		Prometheus: framework.PrometheusOptions{Dir: dir, ScrapeInterval: promqlScrapeInterval, RuleFiles: []string{rulesPath}},
	})
	require.NoError(t, err)
	defer fleet.Stop()
	defer func() {
		if t.Failed() {
			t.Log(fleet.Logs(40))
		}
	}()
	prom := fleet.Prometheus

	checkers, probeSeries := createPromQLCheckers(ctx, t, c)

	// Scraped, and the rules evaluated over it: every checker has its
	// quorum state and its availability over the longest window, every
	// vantage point its probe series, the https checker its expiry, and the
	// rate() windows hold a few scrapes.
	ready := map[string]float64{
		`count(webchecker_probe_success{namespace="` + promqlNamespace + `"})`:                                    float64(probeSeries),
		`count(webchecker_ready{namespace="` + promqlNamespace + `"})`:                                            float64(checkers),
		`count(count by (shard) (webchecker_probe_success{namespace="` + promqlNamespace + `",name="quorum-0"}))`: 3,
		`count(webchecker_probe_ssl_earliest_cert_expiry{namespace="` + promqlNamespace + `"})`:                   1,
		`count(webchecker_probe_client_cert_expiry{namespace="` + promqlNamespace + `"})`:                         1,
		`count(webchecker_probe_address_success{namespace="` + promqlNamespace + `"})`:                            1,
		`count(webchecker_slo_objective{namespace="` + promqlNamespace + `"})`:                                    1,
		`count(webchecker_maintenance{namespace="` + promqlNamespace + `"})`:                                      2,
		`count(webchecker_dependency_down{namespace="` + promqlNamespace + `"})`:                                  float64(len(promqlDependents)),
		// maintained-0, in maintenance, has no availability.
		`count(webchecker:probe_availability:ratio_rate30d{namespace="` + promqlNamespace + `"} >= 0)`: float64(checkers - 1),
		`count(up == 1)`: 3,
		`min(count_over_time(webchecker_probe_success{namespace="` + promqlNamespace + `"}[30s])) >= bool 20`: 1,
	}
	waitForScalars(ctx, t, prom, ready)

	owners := dependentsDown(ctx, t, c)
	t.Logf("owners: %v", owners)
	assert.True(t, slices.ContainsFunc(promqlDependents, func(name string) bool { return owners[name] != owners[promqlDependency] }),
		"a dependent is owned by another replica than %s's (%s): %v", promqlDependency, owners[promqlDependency], owners)
	t.Run("shipped rules on the exported series", func(t *testing.T) {
		testRulesOnExportedSeries(ctx, t, fleet, spec, owners)
	})

	// The check itself: an expression naming a metric that does not exist
	// fails, even where it returns data.
	for _, expr := range []string{`webchecker_probe_sucess`, `sum(webchecker_probe_success) or vector(0) + webchecker_no_such_metric`} {
		_, err := prom.CheckExpression(ctx, expr)
		assert.ErrorIs(t, err, framework.ErrNoSeries, expr)
	}

	expressions := append(ruleExpressions(t, spec), dashboardExpressions(t)...)
	require.Greater(t, len(expressions), 40)
	for _, e := range expressions {
		t.Run(e.source, func(t *testing.T) {
			expr := promqlVariables.Replace(e.expr)
			samples, err := prom.CheckExpression(ctx, expr)
			require.NoError(t, err, "%s\n%s", e.source, expr)
			if e.wantData {
				assert.Positive(t, samples, "%s returns no data: %s", e.source, expr)
			}
			t.Logf("%d samples: %s", samples, expr)
		})
	}
}

// createPromQLCheckers creates the checkers of TestChartPromQLAgainstPrometheus,
// of every kind the expressions look at: up (one probed address by
// address), down (500), https (a
// certificate expiry, and a client certificate's), and up from three vantage points (every replica
// exports its probe series, with its shard); down and depending on the
// down promqlDependency (promqlDependents), and down in an open one-off
// maintenance window (promqlMaintained). It returns how many checkers
// it created, and how many webchecker_probe_success series they have: one
// per vantage point.
func createPromQLCheckers(ctx context.Context, t *testing.T, c client.Client) (checkers, probeSeries int) {
	t.Helper()
	healthy, broken, secure := probetest.NewTarget(), probetest.NewTarget(), probetest.NewTLSTarget()
	for _, target := range []*probetest.Target{healthy, broken, secure} {
		t.Cleanup(target.Close)
	}
	broken.SetStatus(http.StatusInternalServerError)
	targets := map[string]*probetest.Target{"healthy-0": healthy, "healthy-1": healthy, promqlDependency: broken, promqlMaintained: broken, "https-0": secure, "quorum-0": healthy}
	for _, name := range promqlDependents {
		targets[name] = broken
	}
	now := time.Now()
	clientCert := probetest.CertificateTemplate{Name: "prober.test", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour), Leaf: true, Client: true}.Issue(t)
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: promqlNamespace, Name: promqlClientCert},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: clientCert.PEM, corev1.TLSPrivateKeyKey: clientCert.KeyPEM(t)},
	}))
	vantagePoints := map[string]int32{"quorum-0": 3}
	for name, target := range targets {
		wc := &webcheckerv1alpha1.WebChecker{
			ObjectMeta: metav1.ObjectMeta{Namespace: promqlNamespace, Name: name},
			Spec: webcheckerv1alpha1.WebCheckerSpec{
				Host:     target.URL(),
				Path:     "/" + name,
				Interval: &metav1.Duration{Duration: promqlInterval},
				Timeout:  &metav1.Duration{Duration: time.Second},
			},
		}
		if target == secure {
			// And a client certificate: webchecker_probe_client_cert_expiry
			// exists (the server does not ask for it).
			wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true,
				ClientCertSecretRef: &webcheckerv1alpha1.SecretReference{Name: promqlClientCert}}
		}
		if name == "healthy-1" {
			// Its own objective: webchecker_slo_objective exists; and a
			// maintenance window (closed: once a year, for a minute), so
			// that webchecker_maintenance does.
			wc.Labels = map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: "0.999"}
			wc.Spec.MaintenanceWindows = []webcheckerv1alpha1.MaintenanceWindow{{Schedule: "@yearly", Duration: &metav1.Duration{Duration: time.Minute}}}
		}
		if slices.Contains(promqlDependents, name) {
			// Fails while broken-0, which it depends on, is down:
			// webchecker_dependency_down exists.
			wc.Spec.DependsOn = []string{promqlDependency}
		}
		if name == "healthy-0" {
			// Probed address by address (its host is an IP address: one),
			// so that the per-address series exist.
			wc.Spec.Addresses = webcheckerv1alpha1.AddressesAll
		}
		if name == promqlMaintained {
			// Open from a minute ago for two hours: webchecker_maintenance 1.
			wc.Spec.MaintenanceWindows = []webcheckerv1alpha1.MaintenanceWindow{{
				Start: &metav1.Time{Time: now.Add(-time.Minute)}, End: &metav1.Time{Time: now.Add(2 * time.Hour)},
			}}
		}
		probeSeries++
		if k, ok := vantagePoints[name]; ok {
			wc.Spec.VantagePoints = &k
			probeSeries += int(k) - 1
		}
		require.NoError(t, c.Create(ctx, wc))
	}
	return len(targets), probeSeries
}

// waitForScalars waits up to 90s until every expression of want returns its
// value, and fails the test naming those that never do.
func waitForScalars(ctx context.Context, t *testing.T, prom *framework.Prometheus, want map[string]float64) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		pending := map[string]string{}
		for expr, value := range want {
			if v, ok, err := prom.Scalar(ctx, expr); err != nil || !ok || v != value {
				pending[expr] = fmt.Sprintf("%s, want %v", scalarOr(prom, expr), value)
			}
		}
		if len(pending) == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "never scraped every checker: %v", pending)
		time.Sleep(500 * time.Millisecond)
	}
}

// ruleExpressions lists the expression of every rule of a PrometheusRule
// spec.
func ruleExpressions(t *testing.T, spec map[string]any) []promqlExpression {
	var out []promqlExpression
	for _, g := range ruleGroups(spec) {
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			r := r.(map[string]any)
			expr, _ := r["expr"].(string)
			require.NotEmpty(t, expr, "rule %v", r)
			if name, ok := r["record"].(string); ok {
				out = append(out, promqlExpression{source: "record " + name, expr: expr, wantData: true})
				continue
			}
			name, _ := r["alert"].(string)
			out = append(out, promqlExpression{source: "alert " + name, expr: expr, wantData: name == "WebCheckerDown"})
		}
	}
	return out
}

// dashboardExpressions lists the expression of every query of every panel
// of the chart's dashboards, and the selector of every label_values query
// variable.
func dashboardExpressions(t *testing.T) []promqlExpression {
	dir, err := chart.Dir()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(dir, "files", "dashboards", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []promqlExpression
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var d struct {
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr  string `json:"expr"`
					RefID string `json:"refId"`
				} `json:"targets"`
			} `json:"panels"`
		}
		require.NoError(t, json.Unmarshal(data, &d))
		base := filepath.Base(file)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			query, _ := v.Query.(string)
			m := labelValuesQuery.FindStringSubmatch(query)
			require.NotNil(t, m, "%s: variable %s is a label_values query: %v", base, v.Name, v.Query)
			out = append(out, promqlExpression{source: fmt.Sprintf("%s variable %s", base, v.Name), expr: m[1], wantData: true})
		}
		for _, p := range d.Panels {
			for _, target := range p.Targets {
				out = append(out, promqlExpression{source: fmt.Sprintf("%s %s %s", base, p.Title, target.RefID), expr: target.Expr})
			}
		}
	}
	return out
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
