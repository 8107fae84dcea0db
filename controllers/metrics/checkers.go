package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// checkerLabels are the labels of every per-checker metric, before those
// of CheckerLabels.
var checkerLabels = []string{"namespace", "name"}

// checkerDescs are the descriptors of the per-checker metrics, whose
// labels are checkerLabels, then the allowlisted WebChecker labels, then
// their own.
type checkerDescs struct {
	probeSuccess, probeDuration, probeStatusCode, probeLastRun, probesTotal, sslEarliestCertExpiry, sloObjective *prometheus.Desc
}

func newCheckerDescs(extra []string) checkerDescs {
	desc := func(name, help string, own ...string) *prometheus.Desc {
		labels := slices.Concat(checkerLabels, extra, own)
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	return checkerDescs{
		probeSuccess: desc("probe_success",
			"Whether the latest probe of the checker succeeded (1) or failed (0); a certificate that expires soon is no failure here (see probe_ssl_earliest_cert_expiry). Exported only by the replica that owns the checker, once it has probed it."),
		probeDuration: desc("probe_duration_seconds",
			"Duration of the latest probe of the checker, end to end."),
		probeStatusCode: desc("probe_http_status_code",
			"HTTP status code of the latest probe of the checker's final response; 0 when no response was received."),
		probeLastRun: desc("probe_last_run_timestamp_seconds",
			"Unix time at which the latest probe of the checker finished."),
		probesTotal: desc("probes_total",
			"Probes of the checker by this replica since it took the checker over, by result (success or failure).", "result"),
		sloObjective: desc("slo_objective",
			"Availability objective of the checker (the share of its probes that must succeed over 30 days), from its test.network.io/slo-objective label; absent without one, when the chart's rules use their default."),
		sslEarliestCertExpiry: desc("probe_ssl_earliest_cert_expiry",
			"Earliest expiry (NotAfter, Unix time) of the certificates the checker's server presented in the latest probe; absent for plain HTTP and when no TLS response was received."),
	}
}

var ownedCheckersDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "shard", "owned_checkers"),
	"WebCheckers this replica owns and schedules probes for.", nil, nil)

// checkerCollector exports the per-checker metrics of the checkers this
// replica owns, read from the scheduler at scrape time. Nothing is stored
// here, so nothing goes stale: a checker that is removed from the scheduler
// or no longer owned is simply not in the next scrape.
type checkerCollector struct {
	checks CheckSource
	shard  ShardSource
	labels *CheckerLabels
	descs  checkerDescs
}

func newCheckerCollector(checks CheckSource, shard ShardSource, labels *CheckerLabels) *checkerCollector {
	return &checkerCollector{checks: checks, shard: shard, labels: labels, descs: newCheckerDescs(labels.LabelNames())}
}

// Describe implements prometheus.Collector.
func (c *checkerCollector) Describe(ch chan<- *prometheus.Desc) {
	d := c.descs
	for _, d := range []*prometheus.Desc{d.probeSuccess, d.probeDuration, d.probeStatusCode, d.probeLastRun, d.probesTotal, d.sslEarliestCertExpiry, d.sloObjective, ownedCheckersDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *checkerCollector) Collect(ch chan<- prometheus.Metric) {
	owned := 0
	d := c.descs
	for _, st := range c.checks.Snapshot() {
		// Ownership is asked at scrape time: the scheduler may still hold
		// a checker for a moment after the ring moved it elsewhere.
		if !c.shard.Owns(st.Key) {
			continue
		}
		owned++
		labels := append([]string{st.Key.Namespace, st.Key.Name}, c.labels.valuesOf(st.Key)...)
		if objective, ok := c.labels.objectiveOf(st.Key); ok {
			ch <- prometheus.MustNewConstMetric(d.sloObjective, prometheus.GaugeValue, objective, labels...)
		}
		if !st.HasOutcome {
			continue // not probed yet: no value to report
		}
		res := st.Outcome.Result
		success := 0.0
		if res.Success {
			success = 1
		}
		ch <- prometheus.MustNewConstMetric(d.probeSuccess, prometheus.GaugeValue, success, labels...)
		ch <- prometheus.MustNewConstMetric(d.probeDuration, prometheus.GaugeValue, res.Duration.Seconds(), labels...)
		ch <- prometheus.MustNewConstMetric(d.probeStatusCode, prometheus.GaugeValue, float64(res.StatusCode), labels...)
		ch <- prometheus.MustNewConstMetric(d.probeLastRun, prometheus.GaugeValue, float64(st.Outcome.Time.UnixNano())/1e9, labels...)
		ch <- prometheus.MustNewConstMetric(d.probesTotal, prometheus.CounterValue, float64(st.Counts.Successes), slices.Concat(labels, []string{ResultSuccess})...)
		ch <- prometheus.MustNewConstMetric(d.probesTotal, prometheus.CounterValue, float64(st.Counts.Failures), slices.Concat(labels, []string{ResultFailure})...)
		if expiry := res.CertificateExpiry; expiry != nil {
			ch <- prometheus.MustNewConstMetric(d.sslEarliestCertExpiry, prometheus.GaugeValue, float64(expiry.Unix()), labels...)
		}
	}
	ch <- prometheus.MustNewConstMetric(ownedCheckersDesc, prometheus.GaugeValue, float64(owned))
}
