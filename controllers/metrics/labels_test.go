package metrics_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

func TestPrometheusLabelName(t *testing.T) {
	tests := map[string]string{
		"team":                      "label_team",
		"Severity_2":                "label_Severity_2",
		"app.kubernetes.io/part-of": "label_app_kubernetes_io_part_of",
		"team.example.com/on-call":  "label_team_example_com_on_call",
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, want, metrics.PrometheusLabelName(name))
		})
	}
}

func TestNewCheckerLabels(t *testing.T) {
	tests := map[string]struct {
		allowlist []string
		want      []string
		err       string
	}{
		"none":                  {allowlist: nil, want: nil},
		"sorted and compacted":  {allowlist: []string{"team", "", "severity", "team"}, want: []string{"label_severity", "label_team"}},
		"sanitized":             {allowlist: []string{"app.kubernetes.io/part-of"}, want: []string{"label_app_kubernetes_io_part_of"}},
		"two names, one label":  {allowlist: []string{"a.b", "a-b"}, err: `labels "a-b" and "a.b" both become label_a_b`},
		"empty names dropped":   {allowlist: []string{"", ""}, want: nil},
		"underscore and dashes": {allowlist: []string{"on_call", "on-call"}, err: "both become label_on_call"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := metrics.NewCheckerLabels(tc.allowlist)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, l.LabelNames())
		})
	}
}

// TestCheckerMetricsCarryAllowlistedLabels checks the per-checker series of
// checkers with, without and with changed labels: every series of a metric
// has the same label names, empty where a checker lacks the label.
func TestCheckerMetricsCarryAllowlistedLabels(t *testing.T) {
	labelled := types.NamespacedName{Namespace: "shop", Name: "payments"}
	unlabelled := types.NamespacedName{Namespace: "shop", Name: "search"}
	success := strings.TrimPrefix(checkerHeader, "\n")
	tests := map[string]struct {
		allowlist []string
		set       map[types.NamespacedName]map[string]string
		metric    string
		want      string
	}{
		"no allowlist: no labels added": {
			set:    map[types.NamespacedName]map[string]string{labelled: {"team": "payments"}},
			metric: "webchecker_probe_success",
			want: success + `webchecker_probe_success{name="payments",namespace="shop",shard="",zone=""} 1
webchecker_probe_success{name="search",namespace="shop",shard="",zone=""} 0
`,
		},
		"a checker without the label gets it empty": {
			allowlist: []string{"team"},
			set:       map[types.NamespacedName]map[string]string{labelled: {"team": "payments", "other": "x"}, unlabelled: {"other": "y"}},
			metric:    "webchecker_probe_success",
			want: success + `webchecker_probe_success{label_team="payments",name="payments",namespace="shop",shard="",zone=""} 1
webchecker_probe_success{label_team="",name="search",namespace="shop",shard="",zone=""} 0
`,
		},
		"a checker never set gets every label empty": {
			allowlist: []string{"team", "severity"},
			set:       map[types.NamespacedName]map[string]string{labelled: {"team": "payments", "severity": "page"}},
			metric:    "webchecker_probe_success",
			want: success + `webchecker_probe_success{label_severity="page",label_team="payments",name="payments",namespace="shop",shard="",zone=""} 1
webchecker_probe_success{label_severity="",label_team="",name="search",namespace="shop",shard="",zone=""} 0
`,
		},
		"sanitized names, and on every per-checker metric": {
			allowlist: []string{"app.kubernetes.io/part-of"},
			set:       map[types.NamespacedName]map[string]string{labelled: {"app.kubernetes.io/part-of": "shop"}},
			metric:    "webchecker_probes_total",
			want: `# HELP webchecker_probes_total Probes of the checker by this replica since it became one of its vantage points, by result (success or failure).` + probeHelp + `
# TYPE webchecker_probes_total counter
webchecker_probes_total{label_app_kubernetes_io_part_of="shop",name="payments",namespace="shop",result="failure",shard="",zone=""} 0
webchecker_probes_total{label_app_kubernetes_io_part_of="shop",name="payments",namespace="shop",result="success",shard="",zone=""} 1
webchecker_probes_total{label_app_kubernetes_io_part_of="",name="search",namespace="shop",result="failure",shard="",zone=""} 1
webchecker_probes_total{label_app_kubernetes_io_part_of="",name="search",namespace="shop",result="success",shard="",zone=""} 0
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			labels, err := metrics.NewCheckerLabels(tc.allowlist)
			require.NoError(t, err)
			for key, l := range tc.set {
				labels.Set(key, l)
			}
			src := &fakeSources{
				states: []scheduler.CheckState{
					state(labelled, probing.Result{Success: true, StatusCode: 200, Duration: time.Millisecond}, 1, 0),
					state(unlabelled, probing.Result{Reason: probing.ReasonTimeout, Duration: time.Second}, 0, 1),
				},
				owned: map[types.NamespacedName]bool{labelled: true, unlabelled: true},
			}
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, metrics.New().Register(reg, src, src, labels, nil))
			assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(tc.want), tc.metric))
		})
	}
}

func TestCheckerLabelsFollowSetAndDelete(t *testing.T) {
	labels, err := metrics.NewCheckerLabels([]string{"team"})
	require.NoError(t, err)
	key := types.NamespacedName{Namespace: "shop", Name: "payments"}
	src := &fakeSources{
		states: []scheduler.CheckState{state(key, probing.Result{Success: true}, 1, 0)},
		owned:  map[types.NamespacedName]bool{key: true},
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, metrics.New().Register(reg, src, src, labels, nil))
	team := func() string {
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "webchecker_probe_success" {
				for _, l := range f.GetMetric()[0].GetLabel() {
					if l.GetName() == "label_team" {
						return l.GetValue()
					}
				}
			}
		}
		return "<none>"
	}

	labels.Set(key, map[string]string{"team": "payments"})
	assert.Equal(t, "payments", team())
	labels.Set(key, map[string]string{"team": "checkout"})
	assert.Equal(t, "checkout", team(), "a relabelled checker")
	labels.Delete(key)
	assert.Equal(t, "", team(), "forgotten: empty, never stale")
	assert.Zero(t, labels.Len())

	var none *metrics.CheckerLabels
	none.Set(key, map[string]string{"team": "payments"})
	none.Delete(key)
	assert.Empty(t, none.LabelNames())
}

func TestBuildInfo(t *testing.T) {
	tests := map[string]struct {
		version, revision string
		check             func(t *testing.T, b metrics.BuildInfo)
	}{
		"given at build time": {
			version: "0.3.0", revision: "0123abcd",
			check: func(t *testing.T, b metrics.BuildInfo) {
				assert.Equal(t, metrics.BuildInfo{Version: "0.3.0", Revision: "0123abcd", GoVersion: runtime.Version()}, b)
			},
		},
		"read from the binary": {
			check: func(t *testing.T, b metrics.BuildInfo) {
				assert.NotEmpty(t, b.Version)
				assert.NotEmpty(t, b.Revision)
				assert.Equal(t, runtime.Version(), b.GoVersion)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := metrics.ReadBuildInfo(tc.version, tc.revision)
			tc.check(t, b)
			want := `# HELP webchecker_build_info A metric with a constant 1 value labelled by the version, the VCS revision and the Go version that built the webchecker manager.
# TYPE webchecker_build_info gauge
webchecker_build_info{goversion="` + b.GoVersion + `",revision="` + b.Revision + `",version="` + b.Version + `"} 1
`
			assert.NoError(t, testutil.CollectAndCompare(b.Collector(), strings.NewReader(want)))
		})
	}
}

// TestCheckerObjective: webchecker_slo_objective follows a checker's
// SLOObjectiveLabel, with or without an allowlist, and is absent without a
// valid one.
func TestCheckerObjective(t *testing.T) {
	key := types.NamespacedName{Namespace: "shop", Name: "payments"}
	label := func(v string) map[string]string {
		return map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: v, "team": "payments"}
	}
	for name, allowlist := range map[string][]string{"no allowlist": nil, "team allowlisted": {"team"}} {
		t.Run(name, func(t *testing.T) {
			labels, err := metrics.NewCheckerLabels(allowlist)
			require.NoError(t, err)
			src := &fakeSources{
				// Not probed yet: the objective is exported all the same.
				states: []scheduler.CheckState{{Key: key}},
				owned:  map[types.NamespacedName]bool{key: true},
			}
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, metrics.New().Register(reg, src, src, labels, nil))
			series := func(value string) string {
				if value == "" {
					return ""
				}
				team := ""
				if allowlist != nil {
					team = `label_team="payments",`
				}
				return `# HELP webchecker_slo_objective Availability objective of the checker (the share of its probes that must succeed over 30 days), from its test.network.io/slo-objective label; absent without one, when the chart's rules use their default. Exported only by the replica that owns the checker.
# TYPE webchecker_slo_objective gauge
webchecker_slo_objective{` + team + `name="payments",namespace="shop"} ` + value + "\n"
			}
			steps := []struct {
				name   string
				labels map[string]string
				want   string
			}{
				{name: "three nines", labels: label("0.999"), want: "0.999"},
				{name: "changed", labels: label("0.95"), want: "0.95"},
				{name: "not valid: absent", labels: label("99.9")},
				{name: "back", labels: label("0.99"), want: "0.99"},
				{name: "label removed", labels: map[string]string{"team": "payments"}},
			}
			for _, step := range steps {
				labels.Set(key, step.labels)
				assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(series(step.want)), "webchecker_slo_objective"), step.name)
			}
			labels.Set(key, label("0.999"))
			labels.Delete(key)
			assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(""), "webchecker_slo_objective"), "deleted")
		})
	}
}
