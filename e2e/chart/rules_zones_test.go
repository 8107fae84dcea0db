package chart_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/chart"
)

// downFromZonesValues switch the PrometheusRule on with the
// WebCheckerDownFromZones alert and extra as its further settings.
func downFromZonesValues(extra map[string]any) map[string]any {
	zones := map[string]any{"enabled": true}
	for k, v := range extra {
		zones[k] = v
	}
	return map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "downFromZones": zones}}}
}

// alertExpr returns the expression of the alert named alert in spec; empty
// when there is none.
func alertExpr(spec map[string]any, alert string) string {
	for _, g := range ruleGroups(spec) {
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			if r := r.(map[string]any); r["alert"] == alert {
				expr, _ := r["expr"].(string)
				return expr
			}
		}
	}
	return ""
}

// TestChartDownFromZonesValues checks how WebCheckerDownFromZones renders:
// off by default, on with metrics.prometheusRule.downFromZones.enabled (and
// the checker alerts), by checker with its allowlisted labels; and what the
// schema refuses.
func TestChartDownFromZonesValues(t *testing.T) {
	// notPaged is what keeps a checker in maintenance, or one whose
	// dependency is down, from paging.
	const notPaged = " unless on (namespace, name) ((max by (namespace, name) (max_over_time(webchecker_maintenance[1m])) == 1)" +
		" or (max by (namespace, name) (max_over_time(webchecker_dependency_down[1m])) == 1))"
	on := downFromZonesValues(nil)
	tests := map[string]struct {
		values map[string]any
		want   string // "": no such alert
	}{
		"off by default": {values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}}},
		"on":             {values: on, want: "(count by (namespace, name) (max by (namespace, name, zone) (max_over_time(webchecker_probe_success[1m])) == 0) >= 2)" + notPaged},
		"three zones, allowlisted labels": {
			values: map[string]any{
				"manager": map[string]any{"metricLabelsAllowlist": []any{"team"}},
				"metrics": downFromZonesValues(map[string]any{"zones": 3})["metrics"],
			},
			want: "(count by (namespace, name, label_team) (max by (namespace, name, label_team, zone) (max_over_time(webchecker_probe_success[1m])) == 0) >= 3)" + notPaged,
		},
		"checker alerts off": {values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true,
			"checkerAlerts": map[string]any{"enabled": false}, "downFromZones": map[string]any{"enabled": true}}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, alertExpr(renderedRules(t, tc.values), "WebCheckerDownFromZones"))
		})
	}
	messages, err := chart.Lint(chartNamespace, on)
	assert.NoError(t, err, "messages: %v", messages)

	ch, err := chart.Load()
	require.NoError(t, err)
	rejected := map[string]struct {
		zones map[string]any
		want  string
	}{
		"no zone":         {map[string]any{"zones": 0}, "/metrics/prometheusRule/downFromZones/zones"},
		"more than five":  {map[string]any{"zones": 6}, "/metrics/prometheusRule/downFromZones/zones"},
		"zones as a word": {map[string]any{"zones": "two"}, "/metrics/prometheusRule/downFromZones/zones"},
		"not a duration":  {map[string]any{"for": "a while"}, "/metrics/prometheusRule/downFromZones/for"},
		"misspelt key":    {map[string]any{"zone": 2}, "'zone' not allowed"},
	}
	for name, tc := range rejected {
		t.Run(name, func(t *testing.T) {
			_, err := chart.Render(ch, chartRelease, chartNamespace, downFromZonesValues(tc.zones))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// downFromZonesUnitTest is the promtool unit test of
// TestChartDownFromZonesAlert (zones: 2).
const downFromZonesUnitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'webchecker_probe_success{namespace="shop",name="one-zone",instance="a",shard="a",zone="z1"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="one-zone",instance="b",shard="b",zone="z2"}'
        values: '1x10'
      - series: 'webchecker_probe_success{namespace="shop",name="one-zone",instance="c",shard="c",zone="z3"}'
        values: '1x10'
      # Two zones of three down: the quorum is lost too (WebCheckerDown
      # reads webchecker_ready, absent here).
      - series: 'webchecker_probe_success{namespace="shop",name="two-zones",instance="a",shard="a",zone="z1"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="two-zones",instance="b",shard="b",zone="z2"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="two-zones",instance="c",shard="c",zone="z3"}'
        values: '1x10'
      # Two zones of five down, the quorum (3 of 5) holds.
      - series: 'webchecker_probe_success{namespace="shop",name="two-of-five",instance="a",shard="a",zone="z1"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="two-of-five",instance="b",shard="b",zone="z2"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="two-of-five",instance="c",shard="c",zone="z3"}'
        values: '1x10'
      - series: 'webchecker_probe_success{namespace="shop",name="two-of-five",instance="d",shard="d",zone="z4"}'
        values: '1x10'
      - series: 'webchecker_probe_success{namespace="shop",name="two-of-five",instance="e",shard="e",zone="z5"}'
        values: '1x10'
      # Zone z1 holds two vantage points, one still succeeding: up there.
      - series: 'webchecker_probe_success{namespace="shop",name="half-zone",instance="a",shard="a",zone="z1"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="half-zone",instance="d",shard="d",zone="z1"}'
        values: '1x10'
      - series: 'webchecker_probe_success{namespace="shop",name="half-zone",instance="b",shard="b",zone="z2"}'
        values: '0x10'
      # Replicas without a zone: one zone together.
      - series: 'webchecker_probe_success{namespace="shop",name="no-zones",instance="a",shard="a"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="no-zones",instance="b",shard="b"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="no-zones",instance="c",shard="c"}'
        values: '0x10'
      # Two zones down for 3m, then z2 recovers.
      - series: 'webchecker_probe_success{namespace="shop",name="recovered",instance="a",shard="a",zone="z1"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="recovered",instance="b",shard="b",zone="z2"}'
        values: '0 0 0 1x8'
    promql_expr_test:
      - expr: ALERTS{alertname="WebCheckerDownFromZones"}
        eval_time: 2m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDownFromZones",alertstate="pending",severity="warning",namespace="shop",name="two-zones"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerDownFromZones",alertstate="pending",severity="warning",namespace="shop",name="two-of-five"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerDownFromZones",alertstate="pending",severity="warning",namespace="shop",name="recovered"}'
            value: 1
    alert_rule_test:
      - eval_time: 4m
        alertname: WebCheckerDownFromZones
        exp_alerts: []
      - eval_time: 10m
        alertname: WebCheckerDownFromZones
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, name: two-zones}
            exp_annotations:
              summary: WebChecker shop/two-zones is down from several zones
              description: "Probes of WebChecker shop/two-zones have failed from 2 zones (at least 2) for 5m: kubectl describe webchecker -n shop two-zones"
              runbook: RUNBOOK(WebCheckerDownFromZones)
          - exp_labels: {severity: warning, namespace: shop, name: two-of-five}
            exp_annotations:
              summary: WebChecker shop/two-of-five is down from several zones
              description: "Probes of WebChecker shop/two-of-five have failed from 2 zones (at least 2) for 5m: kubectl describe webchecker -n shop two-of-five"
              runbook: RUNBOOK(WebCheckerDownFromZones)
      - eval_time: 10m
        alertname: WebCheckerDown
        exp_alerts: []
`

// TestChartDownFromZonesAlert checks WebCheckerDownFromZones with promtool
// (zones: 2): a zone is down for a checker when every vantage point of it
// there fails; the alert fires once two zones have been down for `for`,
// whether or not the quorum holds, and not for one zone down, for a zone
// where one vantage point of two still succeeds, for vantage points without
// a zone (Prometheus has no zone label for them: one zone together), nor
// for two zones that recover before `for` has passed.
func TestChartDownFromZonesAlert(t *testing.T) {
	promtoolRuleTestWith(t, downFromZonesValues(nil), downFromZonesUnitTest)
}
