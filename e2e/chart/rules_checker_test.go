package chart_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The checker alerts' promtool unit tests. Each replica that probes a
// checker (a vantage point) exports its probe series with labels shard and
// zone; the owner alone exports webchecker_ready, the checker's quorum
// state (its Ready condition). The input series below carry those labels as
// the managers export them, and instance as Prometheus adds it.

// TestChartRulesKeepMetricLabels checks that with
// manager.metricLabelsAllowlist the rules aggregate by the label_<name>
// labels too, so that the alerts carry them for Alertmanager's routing:
// WebCheckerDown directly, the burn-rate alerts through the availability
// recording rules, which drop the vantage points' shard and zone.
func TestChartRulesKeepMetricLabels(t *testing.T) {
	values := map[string]any{
		"manager": map[string]any{"metricLabelsAllowlist": []any{"team", "app.kubernetes.io/part-of"}},
		"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}},
	}
	spec := renderedRules(t, values)
	down := ruleGroups(spec)[0]["rules"].([]any)[0].(map[string]any)
	assert.Equal(t, "(max by (namespace, name, label_team, label_app_kubernetes_io_part_of) (max_over_time(webchecker_ready[1m])) == 0) unless on (namespace, name) ((max by (namespace, name) (max_over_time(webchecker_maintenance[1m])) == 1) or (max by (namespace, name) (max_over_time(webchecker_dependency_down[1m])) == 1))", down["expr"])

	const unitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'webchecker_ready{namespace="shop",name="payments",label_team="payments",label_app_kubernetes_io_part_of="shop",instance="a"}'
        values: '0x10'
      # Two vantage points, both failing every probe.
      - series: 'webchecker_probes_total{namespace="shop",name="payments",label_team="payments",label_app_kubernetes_io_part_of="shop",instance="a",shard="a",zone="z1",result="success"}'
        values: '0x10'
      - series: 'webchecker_probes_total{namespace="shop",name="payments",label_team="payments",label_app_kubernetes_io_part_of="shop",instance="a",shard="a",zone="z1",result="failure"}'
        values: '0+60x10'
      - series: 'webchecker_probes_total{namespace="shop",name="payments",label_team="payments",label_app_kubernetes_io_part_of="shop",instance="b",shard="b",zone="z2",result="success"}'
        values: '0x10'
      - series: 'webchecker_probes_total{namespace="shop",name="payments",label_team="payments",label_app_kubernetes_io_part_of="shop",instance="b",shard="b",zone="z2",result="failure"}'
        values: '0+60x10'
      # No team label: it has none in Prometheus either.
      - series: 'webchecker_ready{namespace="shop",name="search",instance="a"}'
        values: '0x10'
    promql_expr_test:
      - expr: ALERTS{alertname="WebCheckerDown",alertstate="firing"}
        eval_time: 6m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="firing",severity="warning",namespace="shop",name="payments",label_team="payments",label_app_kubernetes_io_part_of="shop"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="firing",severity="warning",namespace="shop",name="search"}'
            value: 1
      - expr: webchecker:probe_availability:ratio_rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'webchecker:probe_availability:ratio_rate5m{namespace="shop",name="payments",label_team="payments",label_app_kubernetes_io_part_of="shop"}'
            value: 0
`
	promtoolRuleTestWith(t, values, unitTest)
}

// webCheckerDownUnitTest is the promtool unit test of
// TestChartWebCheckerDownAlert.
const webCheckerDownUnitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'webchecker_ready{namespace="shop",name="payments",instance="replica-a"}'
        values: '0x10'
      - series: 'webchecker_ready{namespace="shop",name="catalog",instance="replica-a"}'
        values: '1x10'
      # Down all along, but moved from one replica to another after 2m.
      - series: 'webchecker_ready{namespace="shop",name="moved",instance="replica-a"}'
        values: '0 0 0'
      - series: 'webchecker_ready{namespace="shop",name="moved",instance="replica-b"}'
        values: '_ _ _ 0x7'
      # Three vantage points, one failing: the quorum holds, Ready True.
      - series: 'webchecker_probe_success{namespace="shop",name="quorum-held",instance="replica-a",shard="replica-a",zone="z1"}'
        values: '1x10'
      - series: 'webchecker_probe_success{namespace="shop",name="quorum-held",instance="replica-b",shard="replica-b",zone="z2"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="quorum-held",instance="replica-c",shard="replica-c",zone="z3"}'
        values: '1x10'
      - series: 'webchecker_ready{namespace="shop",name="quorum-held",instance="replica-a"}'
        values: '1x10'
      # Three vantage points, two failing: the quorum is lost, Ready False.
      - series: 'webchecker_probe_success{namespace="shop",name="quorum-lost",instance="replica-a",shard="replica-a",zone="z1"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="quorum-lost",instance="replica-b",shard="replica-b",zone="z2"}'
        values: '0x10'
      - series: 'webchecker_probe_success{namespace="shop",name="quorum-lost",instance="replica-c",shard="replica-c",zone="z3"}'
        values: '1x10'
      - series: 'webchecker_ready{namespace="shop",name="quorum-lost",instance="replica-a"}'
        values: '0x10'
      # Failing probes, Ready Unknown (no quorum state yet): no alert.
      - series: 'webchecker_probe_success{namespace="shop",name="unknown",instance="replica-a",shard="replica-a",zone="z1"}'
        values: '0x10'
      # failureThreshold 4: failing from 0m, Ready False from 3m.
      - series: 'webchecker_probe_success{namespace="shop",name="threshold",instance="replica-a",shard="replica-a",zone="z1"}'
        values: '0x10'
      - series: 'webchecker_ready{namespace="shop",name="threshold",instance="replica-a"}'
        values: '1 1 1 0x7'
    # Down from the start: pending, not firing, before 5m; threshold from 4m
    # (the 1m look-back still sees its 1 at 2m when at 3m).
    promql_expr_test:
      - expr: ALERTS{alertname="WebCheckerDown"}
        eval_time: 4m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="pending",severity="warning",namespace="shop",name="payments"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="pending",severity="warning",namespace="shop",name="moved"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="pending",severity="warning",namespace="shop",name="quorum-lost"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerDown",alertstate="pending",severity="warning",namespace="shop",name="threshold"}'
            value: 1
    alert_rule_test:
      - eval_time: 4m
        alertname: WebCheckerDown
        exp_alerts: []
      - eval_time: 6m
        alertname: WebCheckerDown
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, name: payments}
            exp_annotations:
              summary: WebChecker shop/payments is down
              description: "WebChecker shop/payments has been down (Ready False: its probes fail, from a majority of its vantage points when it has several) for 5m: kubectl describe webchecker -n shop payments"
              runbook: RUNBOOK(WebCheckerDown)
          - exp_labels: {severity: warning, namespace: shop, name: moved}
            exp_annotations:
              summary: WebChecker shop/moved is down
              description: "WebChecker shop/moved has been down (Ready False: its probes fail, from a majority of its vantage points when it has several) for 5m: kubectl describe webchecker -n shop moved"
              runbook: RUNBOOK(WebCheckerDown)
          - exp_labels: {severity: warning, namespace: shop, name: quorum-lost}
            exp_annotations:
              summary: WebChecker shop/quorum-lost is down
              description: "WebChecker shop/quorum-lost has been down (Ready False: its probes fail, from a majority of its vantage points when it has several) for 5m: kubectl describe webchecker -n shop quorum-lost"
              runbook: RUNBOOK(WebCheckerDown)
      - eval_time: 10m
        alertname: WebCheckerDown
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, name: payments}
            exp_annotations:
              summary: WebChecker shop/payments is down
              description: "WebChecker shop/payments has been down (Ready False: its probes fail, from a majority of its vantage points when it has several) for 5m: kubectl describe webchecker -n shop payments"
              runbook: RUNBOOK(WebCheckerDown)
          - exp_labels: {severity: warning, namespace: shop, name: moved}
            exp_annotations:
              summary: WebChecker shop/moved is down
              description: "WebChecker shop/moved has been down (Ready False: its probes fail, from a majority of its vantage points when it has several) for 5m: kubectl describe webchecker -n shop moved"
              runbook: RUNBOOK(WebCheckerDown)
          - exp_labels: {severity: warning, namespace: shop, name: quorum-lost}
            exp_annotations:
              summary: WebChecker shop/quorum-lost is down
              description: "WebChecker shop/quorum-lost has been down (Ready False: its probes fail, from a majority of its vantage points when it has several) for 5m: kubectl describe webchecker -n shop quorum-lost"
              runbook: RUNBOOK(WebCheckerDown)
          - exp_labels: {severity: warning, namespace: shop, name: threshold}
            exp_annotations:
              summary: WebChecker shop/threshold is down
              description: "WebChecker shop/threshold has been down (Ready False: its probes fail, from a majority of its vantage points when it has several) for 5m: kubectl describe webchecker -n shop threshold"
              runbook: RUNBOOK(WebCheckerDown)
`

// TestChartWebCheckerDownAlert checks the WebCheckerDown alert with
// promtool: it reads the quorum state, so that it fires once `for` has
// passed for a checker whose Ready condition is False (after its
// thresholds; with three vantage points, when two fail), also across a move
// between replicas, and not for one whose Ready is True while one vantage
// point of three fails, nor for one whose probes fail while its Ready is
// Unknown or still True (failureThreshold not reached).
func TestChartWebCheckerDownAlert(t *testing.T) {
	promtoolRuleTest(t, webCheckerDownUnitTest)
}

// TestChartClientCertificateExpiringAlert checks the
// WebCheckerClientCertificateExpiring alert with promtool: it fires for a
// checker whose client certificate expires within 14 days once `for` has
// passed, and not for one far from expiry.
func TestChartClientCertificateExpiringAlert(t *testing.T) {
	// An expiry of 864960 is 10 days after 16m, when the alert is
	// evaluated; 2592000 is 30 days out.
	const unitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'webchecker_probe_client_cert_expiry{namespace="shop",name="mtls",shard="a",zone="z1"}'
        values: '864960x20'
      - series: 'webchecker_probe_client_cert_expiry{namespace="shop",name="fresh",shard="a",zone="z1"}'
        values: '2592000x20'
    alert_rule_test:
      - eval_time: 14m
        alertname: WebCheckerClientCertificateExpiring
        exp_alerts: []
      - eval_time: 16m
        alertname: WebCheckerClientCertificateExpiring
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, name: mtls}
            exp_annotations:
              summary: The client certificate of WebChecker shop/mtls expires soon
              description: "The client certificate WebChecker shop/mtls presents (spec.tls.clientCertSecretRef) expires in 10d 0h 0m 0s, less than 14 days: kubectl describe webchecker -n shop mtls"
              runbook: RUNBOOK(WebCheckerClientCertificateExpiring)
`
	promtoolRuleTest(t, unitTest)
}

// TestChartCertificateExpiringAlert checks the WebCheckerCertificateExpiring
// alert with promtool: it fires for a checker whose certificate chain
// expires within 14 days once `for` has passed, also across a move between
// replicas and when only one of its vantage points is served that chain,
// and not for a certificate that is renewed or far from expiry.
func TestChartCertificateExpiringAlert(t *testing.T) {
	// Time starts at 0 in promtool: an expiry of 864960 is 10 days after
	// 16m, when the alert is evaluated.
	const unitTest = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'webchecker_probe_ssl_earliest_cert_expiry{namespace="shop",name="payments",shard="a",zone="z1"}'
        values: '864960x20'
      # 30 days out.
      - series: 'webchecker_probe_ssl_earliest_cert_expiry{namespace="shop",name="catalog",shard="a",zone="z1"}'
        values: '2592000x20'
      # Expiring, renewed after 5m.
      - series: 'webchecker_probe_ssl_earliest_cert_expiry{namespace="shop",name="renewed",shard="a",zone="z1"}'
        values: '864960x5 31536000x15'
      # Expiring all along, but moved from one replica to another after 2m.
      - series: 'webchecker_probe_ssl_earliest_cert_expiry{namespace="shop",name="moved",instance="replica-a",shard="replica-a",zone="z1"}'
        values: '864960 864960 864960'
      - series: 'webchecker_probe_ssl_earliest_cert_expiry{namespace="shop",name="moved",instance="replica-b",shard="replica-b",zone="z2"}'
        values: '_ _ _ 864960x17'
      # Three vantage points: the servers of zone z3 present an expiring
      # chain, those of the other zones a renewed one.
      - series: 'webchecker_probe_ssl_earliest_cert_expiry{namespace="shop",name="geo",instance="replica-a",shard="replica-a",zone="z1"}'
        values: '31536000x20'
      - series: 'webchecker_probe_ssl_earliest_cert_expiry{namespace="shop",name="geo",instance="replica-b",shard="replica-b",zone="z2"}'
        values: '31536000x20'
      - series: 'webchecker_probe_ssl_earliest_cert_expiry{namespace="shop",name="geo",instance="replica-c",shard="replica-c",zone="z3"}'
        values: '864960x20'
      # Up: the server is up to WebCheckerDown, not to this alert.
      - series: 'webchecker_ready{namespace="shop",name="payments"}'
        values: '1x20'
    # Expiring from the start: pending, not firing, before 15m.
    promql_expr_test:
      - expr: ALERTS{alertname="WebCheckerCertificateExpiring"}
        eval_time: 14m
        exp_samples:
          - labels: 'ALERTS{alertname="WebCheckerCertificateExpiring",alertstate="pending",severity="warning",namespace="shop",name="payments"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerCertificateExpiring",alertstate="pending",severity="warning",namespace="shop",name="moved"}'
            value: 1
          - labels: 'ALERTS{alertname="WebCheckerCertificateExpiring",alertstate="pending",severity="warning",namespace="shop",name="geo"}'
            value: 1
    alert_rule_test:
      - eval_time: 14m
        alertname: WebCheckerCertificateExpiring
        exp_alerts: []
      - eval_time: 16m
        alertname: WebCheckerCertificateExpiring
        exp_alerts:
          - exp_labels: {severity: warning, namespace: shop, name: payments}
            exp_annotations:
              summary: The certificate of WebChecker shop/payments expires soon
              description: "The certificate chain served to WebChecker shop/payments expires in 10d 0h 0m 0s, less than 14 days: kubectl describe webchecker -n shop payments"
              runbook: RUNBOOK(WebCheckerCertificateExpiring)
          - exp_labels: {severity: warning, namespace: shop, name: moved}
            exp_annotations:
              summary: The certificate of WebChecker shop/moved expires soon
              description: "The certificate chain served to WebChecker shop/moved expires in 10d 0h 0m 0s, less than 14 days: kubectl describe webchecker -n shop moved"
              runbook: RUNBOOK(WebCheckerCertificateExpiring)
          - exp_labels: {severity: warning, namespace: shop, name: geo}
            exp_annotations:
              summary: The certificate of WebChecker shop/geo expires soon
              description: "The certificate chain served to WebChecker shop/geo expires in 10d 0h 0m 0s, less than 14 days: kubectl describe webchecker -n shop geo"
              runbook: RUNBOOK(WebCheckerCertificateExpiring)
      - eval_time: 16m
        alertname: WebCheckerDown
        exp_alerts: []
`
	promtoolRuleTest(t, unitTest)
}
