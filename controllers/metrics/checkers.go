package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/networkio/webchecker/probing/scheduler"
)

// checkerLabels are the labels of every per-checker metric, before those
// of CheckerLabels.
var checkerLabels = []string{"namespace", "name"}

// vantageLabels follow the allowlisted labels on the probe series, which
// every vantage point of a checker exports: the shard id and the zone of
// the replica that probed (the zone empty when unknown).
var vantageLabels = []string{"shard", "zone"}

// checkerDescs are the descriptors of the per-checker metrics. The labels
// of the probe series are checkerLabels, then the allowlisted WebChecker
// labels, then vantageLabels, then their own; those of the owner's series
// (sloObjective, ready) have no vantageLabels: one replica exports them.
type checkerDescs struct {
	// Probe series, exported by every vantage point.
	probeSuccess, probeDuration, probeStatusCode, probeLastRun, probesTotal, sslEarliestCertExpiry *prometheus.Desc
	// Owner series.
	sloObjective, ready *prometheus.Desc
}

func newCheckerDescs(extra []string) checkerDescs {
	desc := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	probe := func(name, help string, own ...string) *prometheus.Desc {
		return desc(name, help+probeHelp, slices.Concat(checkerLabels, extra, vantageLabels, own))
	}
	owner := slices.Concat(checkerLabels, extra)
	return checkerDescs{
		probeSuccess: probe("probe_success",
			"Whether the latest probe of the checker by this replica succeeded (1) or failed (0); a certificate that expires soon is no failure here (see probe_ssl_earliest_cert_expiry). The checker's quorum state is webchecker_ready."),
		probeDuration: probe("probe_duration_seconds",
			"Duration of the latest probe of the checker by this replica, end to end."),
		probeStatusCode: probe("probe_http_status_code",
			"HTTP status code of the final response in the latest probe of the checker by this replica; 0 when no response was received."),
		probeLastRun: probe("probe_last_run_timestamp_seconds",
			"Unix time at which the latest probe of the checker by this replica finished."),
		probesTotal: probe("probes_total",
			"Probes of the checker by this replica since it became one of its vantage points, by result (success or failure).", "result"),
		sslEarliestCertExpiry: probe("probe_ssl_earliest_cert_expiry",
			"Earliest expiry (NotAfter, Unix time) of the certificates the checker's server presented in the latest probe by this replica; absent for plain HTTP and when no TLS response was received."),
		sloObjective: desc("slo_objective",
			"Availability objective of the checker (the share of its probes that must succeed over 30 days), from its test.network.io/slo-objective label; absent without one, when the chart's rules use their default. Exported only by the replica that owns the checker.", owner),
		ready: desc("ready",
			"Quorum state of the checker: 1 while its Ready condition is True, 0 while it is False (with spec.vantagePoints above 1, as the majority of its vantage points see it, after the checker's thresholds); absent while it is Unknown. Exported only by the replica that owns the checker.", owner),
	}
}

// probeHelp ends the help of every probe series.
const probeHelp = " Exported, once it has probed the checker, by every replica that probes it (its vantage points: spec.vantagePoints of them, the owner alone by default), labelled with the replica's shard id and zone (empty when unknown)."

var (
	ownedCheckersDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "shard", "owned_checkers"),
		"WebCheckers this replica owns: it writes their status, and probes them.", nil, nil)
	probedCheckersDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "shard", "probed_checkers"),
		"WebCheckers this replica probes as one of their vantage points, those it owns included.", nil, nil)
)

// checkerCollector exports the per-checker metrics of the checkers this
// replica probes or owns, read from the scheduler (and the quorum states
// from ready) at scrape time. Nothing is stored here, so nothing goes
// stale: a checker that is removed from the scheduler, no longer probed or
// no longer owned is simply not in the next scrape.
type checkerCollector struct {
	checks CheckSource
	shard  ShardSource
	labels *CheckerLabels
	ready  *ReadyStates
	descs  checkerDescs
}

func newCheckerCollector(checks CheckSource, shard ShardSource, labels *CheckerLabels, ready *ReadyStates) *checkerCollector {
	return &checkerCollector{checks: checks, shard: shard, labels: labels, ready: ready, descs: newCheckerDescs(labels.LabelNames())}
}

// Describe implements prometheus.Collector.
func (c *checkerCollector) Describe(ch chan<- *prometheus.Desc) {
	d := c.descs
	for _, d := range []*prometheus.Desc{d.probeSuccess, d.probeDuration, d.probeStatusCode, d.probeLastRun, d.probesTotal, d.sslEarliestCertExpiry, d.sloObjective, ownedCheckersDesc, probedCheckersDesc} {
		ch <- d
	}
	if c.ready != nil {
		ch <- d.ready
	}
}

// Collect implements prometheus.Collector.
func (c *checkerCollector) Collect(ch chan<- prometheus.Metric) {
	owned, probed := 0, 0
	// Read once per scrape: the shard id is fixed, the zone too.
	vantage := []string{c.shard.ShardID(), c.shard.Zone()}
	for _, st := range c.checks.Snapshot() {
		// Ownership and vantage points are asked at scrape time: the
		// scheduler may still hold a checker for a moment after the ring
		// moved it elsewhere. The owner is a vantage point too.
		owns := c.shard.Owns(st.Key)
		probes := c.shard.Probes(st.Key, max(st.VantagePoints, 1))
		if !owns && !probes {
			continue
		}
		labels := append([]string{st.Key.Namespace, st.Key.Name}, c.labels.valuesOf(st.Key)...)
		if owns {
			owned++
			c.collectOwner(ch, st, labels)
		}
		if probes {
			probed++
			if st.HasOutcome { // else not probed yet: no value to report
				c.collectProbe(ch, st, slices.Concat(labels, vantage))
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(ownedCheckersDesc, prometheus.GaugeValue, float64(owned))
	ch <- prometheus.MustNewConstMetric(probedCheckersDesc, prometheus.GaugeValue, float64(probed))
}

// collectOwner sends the series of a checker that only its owner exports:
// its objective and its quorum state; labels are its checker labels.
func (c *checkerCollector) collectOwner(ch chan<- prometheus.Metric, st scheduler.CheckState, labels []string) {
	d := c.descs
	if objective, ok := c.labels.objectiveOf(st.Key); ok {
		ch <- prometheus.MustNewConstMetric(d.sloObjective, prometheus.GaugeValue, objective, labels...)
	}
	if ready, known := c.ready.get(st.Key); known {
		ch <- prometheus.MustNewConstMetric(d.ready, prometheus.GaugeValue, boolValue(ready), labels...)
	}
}

// collectProbe sends the probe series of a checker this replica probed;
// labels are its checker labels followed by the vantage labels.
func (c *checkerCollector) collectProbe(ch chan<- prometheus.Metric, st scheduler.CheckState, labels []string) {
	d := c.descs
	res := st.Outcome.Result
	ch <- prometheus.MustNewConstMetric(d.probeSuccess, prometheus.GaugeValue, boolValue(res.Success), labels...)
	ch <- prometheus.MustNewConstMetric(d.probeDuration, prometheus.GaugeValue, res.Duration.Seconds(), labels...)
	ch <- prometheus.MustNewConstMetric(d.probeStatusCode, prometheus.GaugeValue, float64(res.StatusCode), labels...)
	ch <- prometheus.MustNewConstMetric(d.probeLastRun, prometheus.GaugeValue, float64(st.Outcome.Time.UnixNano())/1e9, labels...)
	ch <- prometheus.MustNewConstMetric(d.probesTotal, prometheus.CounterValue, float64(st.Counts.Successes), slices.Concat(labels, []string{ResultSuccess})...)
	ch <- prometheus.MustNewConstMetric(d.probesTotal, prometheus.CounterValue, float64(st.Counts.Failures), slices.Concat(labels, []string{ResultFailure})...)
	if expiry := res.CertificateExpiry; expiry != nil {
		ch <- prometheus.MustNewConstMetric(d.sslEarliestCertExpiry, prometheus.GaugeValue, float64(expiry.Unix()), labels...)
	}
}
