package chart_test

import "testing"

// TestChartRulesPageForTheDependencyOnly checks the alerts of checkers that
// depend on another (spec.dependsOn): "router" is down from 0m; "shop"
// depends on it and fails too, its owner exporting
// webchecker_dependency_down 1 (its Ready reason DependencyDown) until the
// router comes back at 30m, while shop stays down on its own. The router
// pages (WebCheckerDown, and its error budget); shop does not while the
// router is down, and pages 5m (its for) after it is back. Shop's budget
// counts all along.
func TestChartRulesPageForTheDependencyOnly(t *testing.T) {
	const unitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'webchecker_ready{namespace="shop",name="router",instance="a"}'
        values: '0x29 1x60'
      - series: 'webchecker_probes_total{namespace="shop",name="router",instance="a",result="success"}'
        values: '0x29 0+4x60'
      - series: 'webchecker_probes_total{namespace="shop",name="router",instance="a",result="failure"}'
        values: '0+4x29 116x60'
      - series: 'webchecker_ready{namespace="shop",name="shop",instance="b"}'
        values: '0x90'
      - series: 'webchecker_dependency_down{namespace="shop",name="shop",instance="b"}'
        values: '1x29 _x60'
      - series: 'webchecker_probes_total{namespace="shop",name="shop",instance="b",result="success"}'
        values: '0x90'
      - series: 'webchecker_probes_total{namespace="shop",name="shop",instance="b",result="failure"}'
        values: '0+4x90'
    promql_expr_test:
      - expr: ALERTS{alertname="WebCheckerDown",alertstate="firing"}
        eval_time: 20m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="firing",severity="warning",namespace="shop",name="router"}'
            value: 1
      - expr: ALERTS{alertname="WebCheckerErrorBudgetBurning",alertstate="firing"}
        eval_time: 20m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerErrorBudgetBurning",alertstate="firing",severity="critical",namespace="shop",name="router"}'
            value: 1
      - expr: ALERTS{alertname="WebCheckerDown",name="shop"}
        eval_time: 33m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="pending",severity="warning",namespace="shop",name="shop"}'
            value: 1
      - expr: ALERTS{alertname="WebCheckerDown",alertstate="firing",name="shop"}
        eval_time: 38m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="firing",severity="warning",namespace="shop",name="shop"}'
            value: 1
      - expr: round(webchecker:probe_availability:ratio_rate5m{name="shop"}, 0.001)
        eval_time: 20m
        exp_samples:
          - labels: '{namespace="shop",name="shop"}'
            value: 0
`
	promtoolRuleTest(t, unitTest)
}
