package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// checkerLabels are the labels of every per-checker metric.
var checkerLabels = []string{"namespace", "name"}

func checkerDesc(name, help string, extraLabels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, append(checkerLabels, extraLabels...), nil)
}

var (
	probeSuccessDesc = checkerDesc("probe_success",
		"Whether the latest probe of the checker succeeded (1) or failed (0); a certificate that expires soon is no failure here (see probe_ssl_earliest_cert_expiry). Exported only by the replica that owns the checker, once it has probed it.")
	probeDurationDesc = checkerDesc("probe_duration_seconds",
		"Duration of the latest probe of the checker, end to end.")
	probeStatusCodeDesc = checkerDesc("probe_http_status_code",
		"HTTP status code of the latest probe of the checker's final response; 0 when no response was received.")
	probeLastRunDesc = checkerDesc("probe_last_run_timestamp_seconds",
		"Unix time at which the latest probe of the checker finished.")
	probesTotalDesc = checkerDesc("probes_total",
		"Probes of the checker by this replica since it took the checker over, by result (success or failure).", "result")
	sslEarliestCertExpiryDesc = checkerDesc("probe_ssl_earliest_cert_expiry",
		"Earliest expiry (NotAfter, Unix time) of the certificates the checker's server presented in the latest probe; absent for plain HTTP and when no TLS response was received.")
	ownedCheckersDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "shard", "owned_checkers"),
		"WebCheckers this replica owns and schedules probes for.", nil, nil)
)

// checkerCollector exports the per-checker metrics of the checkers this
// replica owns, read from the scheduler at scrape time. Nothing is stored
// here, so nothing goes stale: a checker that is removed from the scheduler
// or no longer owned is simply not in the next scrape.
type checkerCollector struct {
	checks CheckSource
	shard  ShardSource
}

func newCheckerCollector(checks CheckSource, shard ShardSource) *checkerCollector {
	return &checkerCollector{checks: checks, shard: shard}
}

// Describe implements prometheus.Collector.
func (c *checkerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{probeSuccessDesc, probeDurationDesc, probeStatusCodeDesc, probeLastRunDesc, probesTotalDesc, sslEarliestCertExpiryDesc, ownedCheckersDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *checkerCollector) Collect(ch chan<- prometheus.Metric) {
	owned := 0
	for _, st := range c.checks.Snapshot() {
		// Ownership is asked at scrape time: the scheduler may still hold
		// a checker for a moment after the ring moved it elsewhere.
		if !c.shard.Owns(st.Key) {
			continue
		}
		owned++
		if !st.HasOutcome {
			continue // not probed yet: no value to report
		}
		labels := []string{st.Key.Namespace, st.Key.Name}
		res := st.Outcome.Result
		success := 0.0
		if res.Success {
			success = 1
		}
		ch <- prometheus.MustNewConstMetric(probeSuccessDesc, prometheus.GaugeValue, success, labels...)
		ch <- prometheus.MustNewConstMetric(probeDurationDesc, prometheus.GaugeValue, res.Duration.Seconds(), labels...)
		ch <- prometheus.MustNewConstMetric(probeStatusCodeDesc, prometheus.GaugeValue, float64(res.StatusCode), labels...)
		ch <- prometheus.MustNewConstMetric(probeLastRunDesc, prometheus.GaugeValue, float64(st.Outcome.Time.UnixNano())/1e9, labels...)
		ch <- prometheus.MustNewConstMetric(probesTotalDesc, prometheus.CounterValue, float64(st.Counts.Successes), append(labels, ResultSuccess)...)
		ch <- prometheus.MustNewConstMetric(probesTotalDesc, prometheus.CounterValue, float64(st.Counts.Failures), append(labels, ResultFailure)...)
		if expiry := res.CertificateExpiry; expiry != nil {
			ch <- prometheus.MustNewConstMetric(sslEarliestCertExpiryDesc, prometheus.GaugeValue, float64(expiry.Unix()), labels...)
		}
	}
	ch <- prometheus.MustNewConstMetric(ownedCheckersDesc, prometheus.GaugeValue, float64(owned))
}
