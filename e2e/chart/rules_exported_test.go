package chart_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
)

// exportedJob is the job label of the replicas' series, as the framework's
// Prometheus scrapes them; the operator alerts aggregate by it.
const exportedJob = "webchecker"

// exportedSteps is how many one-minute steps the promtool unit test's
// input series last past their first sample (40m), and exportedEvalTime
// when its expectations are evaluated: long after every `for` of the
// checker alerts (WebCheckerDown: 5m).
const (
	exportedSteps    = 40
	exportedEvalTime = "15m"
)

// replicaScrape is what one replica exported at one instant: its
// webchecker_* samples of namespace promql and its own (without a
// namespace).
type replicaScrape struct {
	instance string // the replica's shard id
	at       time.Time
	samples  []framework.Sample
}

// scrapeReplicas scrapes every replica of fleet once.
func scrapeReplicas(ctx context.Context, fleet *framework.Fleet) ([]replicaScrape, error) {
	var out []replicaScrape
	for _, m := range fleet.Replicas {
		samples, err := framework.ScrapeSamples(ctx, m.MetricsAddr, "webchecker_")
		if err != nil {
			return nil, err
		}
		at := time.Now()
		samples = slices.DeleteFunc(samples, func(s framework.Sample) bool {
			ns, ok := s.Labels["namespace"]
			return ok && ns != promqlNamespace
		})
		out = append(out, replicaScrape{instance: m.Options.ShardID, at: at, samples: samples})
	}
	return out, nil
}

// scrapeTwice scrapes every replica, then again until at least gap later
// every vantage point of every checker has probed since (its
// webchecker_probes_total, summed over result, grew), within a minute.
func scrapeTwice(ctx context.Context, t *testing.T, fleet *framework.Fleet, gap time.Duration) (first, second []replicaScrape) {
	t.Helper()
	first, err := scrapeReplicas(ctx, fleet)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.GreaterOrEqual(c, time.Since(first[0].at), gap, "the second scrape is a few probe intervals after the first")
		scrape, err := scrapeReplicas(ctx, fleet)
		require.NoError(c, err)
		require.NoError(c, probesMoved(first, scrape))
		second = scrape
	}, time.Minute, 500*time.Millisecond)
	return first, second
}

// probesMoved returns an error naming the vantage points (a replica's
// webchecker_probes_total of a checker, summed over result) of second that
// did not grow since first.
func probesMoved(first, second []replicaScrape) error {
	totals := func(r replicaScrape) map[string]float64 {
		out := map[string]float64{}
		for _, s := range r.samples {
			if s.Name == "webchecker_probes_total" {
				labels := maps.Clone(s.Labels)
				delete(labels, "result")
				out[seriesSelector("", labels)] += s.Value
			}
		}
		return out
	}
	var still []string
	for i, r := range second {
		before := totals(first[i])
		for key, total := range totals(r) {
			if total <= before[key] {
				still = append(still, r.instance+key)
			}
		}
	}
	if len(still) > 0 {
		slices.Sort(still)
		return fmt.Errorf("no probe since the first scrape: %v", still)
	}
	return nil
}

// promtoolSeries is an input series of a promtool rule unit test.
type promtoolSeries struct {
	Series string `json:"series"`
	Values string `json:"values"`
}

// exportedInputSeries turns two scrapes of the same replicas into
// promtool input series of steps one-minute steps: each sample of second
// with its labels and instance (the replica's shard id) and job
// exportedJob; a gauge keeps its value ('Vxsteps'), a counter grows from
// it at its rate between the scrapes, per minute ('V+Dxsteps'; D is 0 for
// a series the first scrape lacks, or that went down: reset). Sorted by
// series.
func exportedInputSeries(first, second []replicaScrape, steps int) []promtoolSeries {
	var out []promtoolSeries
	for i, r := range second {
		before := map[string]float64{}
		for _, s := range first[i].samples {
			before[seriesSelector(s.Name, s.Labels)] = s.Value
		}
		minutes := r.at.Sub(first[i].at).Minutes()
		for _, s := range r.samples {
			labels := maps.Clone(s.Labels)
			labels["instance"], labels["job"] = r.instance, exportedJob
			values := formatValue(s.Value) + "x" + strconv.Itoa(steps)
			if s.Counter {
				perMinute := 0.0
				if v, ok := before[seriesSelector(s.Name, s.Labels)]; ok && v <= s.Value && minutes > 0 {
					perMinute = (s.Value - v) / minutes
				}
				values = formatValue(s.Value) + "+" + formatValue(perMinute) + "x" + strconv.Itoa(steps)
			}
			out = append(out, promtoolSeries{Series: seriesSelector(s.Name, labels), Values: values})
		}
	}
	slices.SortFunc(out, func(a, b promtoolSeries) int { return strings.Compare(a.Series, b.Series) })
	return out
}

// seriesSelector renders name{labels} with the labels sorted.
func seriesSelector(name string, labels map[string]string) string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		pairs = append(pairs, k+"="+strconv.Quote(labels[k]))
	}
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// formatValue writes v as promtool's series notation reads it: decimal,
// never an exponent.
func formatValue(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// promtoolUnitTest is a promtool rule unit test file, with one test group.
type promtoolUnitTest struct {
	RuleFiles          []string            `json:"rule_files"`
	EvaluationInterval string              `json:"evaluation_interval"`
	Tests              []promtoolTestGroup `json:"tests"`
}

type promtoolTestGroup struct {
	Interval       string              `json:"interval"`
	InputSeries    []promtoolSeries    `json:"input_series"`
	AlertRuleTests []promtoolAlertTest `json:"alert_rule_test,omitempty"`
	ExprTests      []promtoolExprTest  `json:"promql_expr_test,omitempty"`
}

type promtoolAlertTest struct {
	EvalTime  string              `json:"eval_time"`
	Alertname string              `json:"alertname"`
	ExpAlerts []promtoolExpAlerts `json:"exp_alerts"`
}

type promtoolExpAlerts struct {
	ExpLabels      map[string]string `json:"exp_labels"`
	ExpAnnotations map[string]string `json:"exp_annotations"`
}

type promtoolExprTest struct {
	Expr       string              `json:"expr"`
	EvalTime   string              `json:"eval_time"`
	ExpSamples []promtoolExpSample `json:"exp_samples"`
}

type promtoolExpSample struct {
	Labels string  `json:"labels"`
	Value  float64 `json:"value"`
}

// expandedAnnotations returns the annotations of the alert named alert in
// spec, expanded for a checker as Prometheus expands them for one of
// its alerts: they may use $labels.namespace and $labels.name only.
func expandedAnnotations(t *testing.T, spec map[string]any, alert, namespace, name string) map[string]string {
	t.Helper()
	expand := strings.NewReplacer("{{ $labels.namespace }}", namespace, "{{ $labels.name }}", name)
	out := map[string]string{}
	for _, key := range []string{"summary", "description", "runbook"} {
		value := expand.Replace(ruleAnnotation(spec, alert, key))
		require.NotContains(t, value, "{{", "annotation %s of %s uses more than $labels.namespace and $labels.name", key, alert)
		if value != "" {
			out[key] = value
		}
	}
	return out
}

// byName is exp_samples of an expression that aggregates by name: one
// sample {name="<name>"} per entry of values.
func byName(values map[string]float64) []promtoolExpSample {
	out := []promtoolExpSample{}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		out = append(out, promtoolExpSample{Labels: fmt.Sprintf(`{name=%q}`, name), Value: values[name]})
	}
	return out
}

// dependentsDown waits until broken-0 and its dependents have an owner
// (status.shard) and every dependent reads Ready False, reason
// DependencyDown, naming broken-0; it returns the owners, by checker name.
func dependentsDown(ctx context.Context, t *testing.T, c client.Client) map[string]string {
	t.Helper()
	owners := map[string]string{}
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		for _, name := range append([]string{promqlDependency}, promqlDependents...) {
			var wc webcheckerv1alpha1.WebChecker
			require.NoError(collect, c.Get(ctx, client.ObjectKey{Namespace: promqlNamespace, Name: name}, &wc))
			require.NotEmpty(collect, wc.Status.Shard, "%s has an owner", name)
			owners[name] = wc.Status.Shard
			if name == promqlDependency {
				continue
			}
			ready := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
			require.NotNil(collect, ready, "%s has a Ready condition", name)
			assert.Equal(collect, "False", string(ready.Status), name)
			assert.Equal(collect, webcheckerv1alpha1.ReasonDependencyDown, ready.Reason, "%s: %s", name, ready.Message)
			assert.Contains(collect, ready.Message, promqlDependency, name)
		}
	}, time.Minute, 500*time.Millisecond)
	return owners
}

// testRulesOnExportedSeries runs the chart's rules (spec, rendered with
// downFromZonesValues(nil)) with promtool on what the replicas of fleet
// export: two scrapes a few probe intervals apart become the input series
// of a rule unit test (exportedInputSeries), 40 minutes of the fleet as
// it is now. owners are the owners of broken-0 and its dependents
// (dependentsDown), which the series must agree with. The expectations,
// at 15m: the inputs hold what makes the alert a question (broken-0, its
// dependents and maintained-0 are Ready 0 on their owners' instances, the
// dependents' owners export webchecker_dependency_down 1, maintained-0's
// webchecker_maintenance 1), WebCheckerDown fires for broken-0 alone, no
// alert fires for its dependents, maintained-0 or the healthy checkers,
// and none of the operator alerts on the replicas' own series (the ring,
// fencing, status writes) fires. WebCheckerDownFromZones is not asked
// about: the replicas have no zone, so it cannot fire for anyone.
func testRulesOnExportedSeries(ctx context.Context, t *testing.T, fleet *framework.Fleet, spec map[string]any, owners map[string]string) {
	first, second := scrapeTwice(ctx, t, fleet, 3*promqlInterval)
	series := exportedInputSeries(first, second, exportedSteps)

	ready := map[string]float64{promqlDependency: 0, promqlMaintained: 0}
	dependencyDown := map[string]float64{}
	for _, name := range promqlDependents {
		ready[name], dependencyDown[name] = 0, 1
	}
	perOwner := map[string]int{}
	for _, owner := range owners {
		perOwner[owner]++
	}
	var owned []promtoolExpSample
	for _, owner := range slices.Sorted(maps.Keys(perOwner)) {
		owned = append(owned, promtoolExpSample{Labels: fmt.Sprintf(`{instance=%q}`, owner), Value: float64(perOwner[owner])})
	}
	dependentNames := promqlDependency + "|" + strings.Join(promqlDependents, "|")
	notPaged := strings.Join(promqlDependents, "|") + "|" + promqlMaintained + "|healthy-.*|quorum-0"

	unitTest := promtoolUnitTest{
		RuleFiles:          []string{"rules.yaml"},
		EvaluationInterval: "1m",
		Tests: []promtoolTestGroup{{
			Interval:    "1m",
			InputSeries: series,
			AlertRuleTests: []promtoolAlertTest{{
				EvalTime:  exportedEvalTime,
				Alertname: "WebCheckerDown",
				ExpAlerts: []promtoolExpAlerts{{
					ExpLabels:      map[string]string{"severity": "warning", "namespace": promqlNamespace, "name": promqlDependency},
					ExpAnnotations: expandedAnnotations(t, spec, "WebCheckerDown", promqlNamespace, promqlDependency),
				}},
			}},
			ExprTests: []promtoolExprTest{
				{Expr: `max by (name) (webchecker_ready{name=~"` + promqlDependency + `|` + promqlMaintained + `|dependent-.*"})`, ExpSamples: byName(ready)},
				{Expr: `max by (name) (webchecker_dependency_down)`, ExpSamples: byName(dependencyDown)},
				{Expr: `max by (name) (webchecker_maintenance)`, ExpSamples: byName(map[string]float64{"healthy-1": 0, promqlMaintained: 1})},
				// The owners in the series are those of the status.
				{Expr: `count by (instance) (webchecker_ready{name=~"` + dependentNames + `"})`, ExpSamples: owned},
				{Expr: `ALERTS{alertstate="firing",name=~"` + notPaged + `"}`, ExpSamples: []promtoolExpSample{}},
				{Expr: `ALERTS{alertstate="firing",alertname=~"WebCheckerRingMembersMissing|WebCheckerReplicaFenced|WebCheckerStatusWritesFailing"}`, ExpSamples: []promtoolExpSample{}},
			},
		}},
	}
	for i := range unitTest.Tests[0].ExprTests {
		unitTest.Tests[0].ExprTests[i].EvalTime = exportedEvalTime
	}
	data, err := yaml.Marshal(unitTest)
	require.NoError(t, err)
	t.Logf("%d input series from %d replicas", len(series), len(second))
	if !promtoolTestRules(t, spec, data) {
		t.Logf("the generated unit test:\n%s", data)
	}
}

// promtoolTestRules writes spec (a rule file) and unitTest (a promtool
// rule unit test reading rules.yaml) into a temporary directory and runs
// promtool test rules on them; it reports whether the test passed. It is
// promtoolRuleTestWith for rules already rendered: those the fleet's
// Prometheus loaded, not a second rendering of a chart that may have
// changed since.
func promtoolTestRules(t *testing.T, spec map[string]any, unitTest []byte) bool {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool comes with Debian's prometheus package: make debian-tools")
	dir := t.TempDir()
	rules, err := yaml.Marshal(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test.yaml"), unitTest, 0o600))
	cmd := exec.Command(promtool, "test", "rules", "test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return assert.NoError(t, err, "promtool test rules %s:\n%s", filepath.Join(dir, "test.yaml"), out)
}

// TestExportedInputSeries checks how two scrapes become promtool input
// series: gauges constant, counters at their rate per minute, instance
// and job added, a counter that is new or went down flat.
func TestExportedInputSeries(t *testing.T) {
	at := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	scrape := func(after time.Duration, samples ...framework.Sample) []replicaScrape {
		return []replicaScrape{{instance: "r-0", at: at.Add(after), samples: samples}}
	}
	probes := func(v float64) framework.Sample {
		return framework.Sample{Name: "webchecker_probes_total", Labels: map[string]string{"name": "a", "result": "success"}, Value: v, Counter: true}
	}
	const series = `webchecker_probes_total{instance="r-0",job="webchecker",name="a",result="success"}`
	tests := map[string]struct {
		first, second []replicaScrape
		want          []promtoolSeries
	}{
		"gauge": {
			first:  scrape(0, framework.Sample{Name: "webchecker_ready", Labels: map[string]string{"name": "a"}, Value: 1}),
			second: scrape(30*time.Second, framework.Sample{Name: "webchecker_ready", Labels: map[string]string{"name": "a"}, Value: 0}),
			want:   []promtoolSeries{{Series: `webchecker_ready{instance="r-0",job="webchecker",name="a"}`, Values: "0x3"}},
		},
		"counter": {
			first:  scrape(0, probes(10)),
			second: scrape(30*time.Second, probes(25)),
			want:   []promtoolSeries{{Series: series, Values: "25+30x3"}},
		},
		"new counter": {
			first:  scrape(0),
			second: scrape(30*time.Second, probes(25)),
			want:   []promtoolSeries{{Series: series, Values: "25+0x3"}},
		},
		"reset counter": {
			first:  scrape(0, probes(10)),
			second: scrape(30*time.Second, probes(2)),
			want:   []promtoolSeries{{Series: series, Values: "2+0x3"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, exportedInputSeries(tc.first, tc.second, 3))
		})
	}
}
