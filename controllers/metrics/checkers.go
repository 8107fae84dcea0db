package metrics

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// checkerLabels are the labels of every per-checker metric, before those
// of CheckerLabels.
var checkerLabels = []string{"namespace", "name"}

// vantageLabels follow the allowlisted labels on the probe series, which
// every vantage point of a checker exports: the shard id and the zone of
// the replica that probed (the zone empty when unknown).
var vantageLabels = []string{"shard", "zone"}

// probeHelp ends the help of every probe series.
const probeHelp = " Exported, once it has probed the checker, by every replica that probes it (its vantage points: spec.vantagePoints of them, the owner alone by default), labelled with the replica's shard id and zone (empty when unknown)."

// checkerFamily is one metric family of the checker collector: its name,
// help, type and label names (what both its prometheus.Desc and its text
// header are made of), and how to find its series in a scrape.
type checkerFamily struct {
	name, help string
	valueType  prometheus.ValueType
	labels     []string
	// sorted lists the indexes of labels in the order of their names, in
	// which the text is written, as client_golang writes it.
	sorted []int
	desc   *prometheus.Desc
	// each calls emit with the label values (in the order of labels) and
	// the value of every series of the family in s. The label values are
	// only valid during the call.
	each func(s *scrape, emit func(labelValues []string, v float64))
}

// checkerCollector exports the per-checker metrics of the checkers this
// replica probes or owns, read from the scheduler (and the quorum states
// from ready) at scrape time, and the shard gauges counting them. Nothing
// is stored here, so nothing goes stale: a checker that is removed from
// the scheduler, no longer probed or no longer owned is simply not in the
// next scrape.
//
// It is a prometheus.Collector, and it writes the same series straight in
// the text exposition format (see WriteText), which the manager serves: a
// registry's Gather holds every series of a scrape in memory at once, some
// hundreds of bytes each (about 16 MB per scrape for a replica that probes
// 3,300 checkers), while the text is written as it is made.
type checkerCollector struct {
	checks CheckSource
	shard  ShardSource
	labels *CheckerLabels
	ready  *ReadyStates
	// families are written in this order (see newCheckerFamilies).
	families []checkerFamily
}

func newCheckerCollector(checks CheckSource, shard ShardSource, labels *CheckerLabels, ready *ReadyStates) *checkerCollector {
	c := &checkerCollector{checks: checks, shard: shard, labels: labels, ready: ready}
	c.families = c.newCheckerFamilies(labels.LabelNames())
	return c
}

// Describe implements prometheus.Collector.
func (c *checkerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.families {
		ch <- f.desc
	}
}

// Collect implements prometheus.Collector.
func (c *checkerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.scrape()
	for _, f := range c.families {
		f.each(s, func(labelValues []string, v float64) {
			ch <- prometheus.MustNewConstMetric(f.desc, f.valueType, v, labelValues...)
		})
	}
}

// checkerRow is one checker this replica probes or owns, at a scrape.
type checkerRow struct {
	state *scheduler.CheckState // in the scrape's snapshot
	// extra are the values of the allowlisted labels (see CheckerLabels).
	extra []string
	owns  bool
	// probed is set when this replica probes the checker and has an
	// outcome of it: the probe series have values.
	probed bool
}

// appendLabels appends the values of the checker's labels (checkerLabels,
// then the allowlisted ones) to b.
func (r *checkerRow) appendLabels(b []string) []string {
	return append(append(b, r.state.Key.Namespace, r.state.Key.Name), r.extra...)
}

// scrape is what one scrape reads of the scheduler and the shard: the
// rows, sorted by checker, and the counts of the shard gauges.
type scrape struct {
	rows          []checkerRow
	owned, probed int
	// vantage are the values of vantageLabels.
	vantage []string
}

// scrape reads the scheduler and the shard once. It copies only the
// checkers this replica probes or owns.
func (c *checkerCollector) scrape() *scrape {
	// Read once per scrape: the shard id is fixed, the zone too.
	s := &scrape{vantage: []string{c.shard.ShardID(), c.shard.Zone()}}
	// Ownership and vantage points are asked at scrape time, once per
	// checker, while the scheduler copies it: the scheduler may still hold
	// a checker for a moment after the ring moved it elsewhere. The owner
	// is a vantage point too. Both questions are answered from the
	// Assigner's current assignment, without a lock. The answers for the
	// checkers kept are in the order of the states returned.
	type part struct{ owns, probes bool }
	var parts []part
	states := c.checks.SnapshotOf(func(key types.NamespacedName, vantagePoints int) bool {
		p := part{owns: c.shard.Owns(key), probes: c.shard.Probes(key, max(vantagePoints, 1))}
		if !p.owns && !p.probes {
			return false
		}
		parts = append(parts, p)
		return true
	})
	s.rows = make([]checkerRow, len(states))
	for i := range states {
		st, p := &states[i], parts[i]
		if p.owns {
			s.owned++
		}
		if p.probes {
			s.probed++
		}
		s.rows[i] = checkerRow{
			state:  st,
			extra:  c.labels.valuesOf(st.Key),
			owns:   p.owns,
			probed: p.probes && st.HasOutcome, // else not probed yet: no value to report
		}
	}
	slices.SortFunc(s.rows, func(a, b checkerRow) int {
		return cmp.Or(cmp.Compare(a.state.Key.Namespace, b.state.Key.Namespace), cmp.Compare(a.state.Key.Name, b.state.Key.Name))
	})
	return s
}

// newCheckerFamilies returns the families of c, whose per-checker series
// carry the allowlisted labels extra: the owner's series (labels
// checkerLabels and extra, exported by the owner alone), the probe series
// (then vantageLabels and their own, exported by every vantage point),
// and the shard gauges.
func (c *checkerCollector) newCheckerFamilies(extra []string) []checkerFamily {
	ownerLabels := slices.Concat(checkerLabels, extra)
	b := familyBuilder{ownerLabels: ownerLabels, probeLabels: slices.Concat(ownerLabels, vantageLabels)}
	owner, probe, gauge := b.owner, b.probe, probeGauge

	families := []checkerFamily{
		owner(fqName("slo_objective"),
			"Availability objective of the checker (the share of its probes that must succeed over 30 days), from its test.network.io/slo-objective label; absent without one, when the chart's rules use their default. Exported only by the replica that owns the checker.",
			func(r *checkerRow) (float64, bool) { return c.labels.objectiveOf(r.state.Key) }),
	}
	if c.ready != nil {
		families = append(families, owner(fqName("ready"),
			"Quorum state of the checker: 1 while its Ready condition is True, 0 while it is False (with spec.vantagePoints above 1, as the majority of its vantage points see it, after the checker's thresholds or failure window); absent while it is Unknown. Exported only by the replica that owns the checker.",
			func(r *checkerRow) (float64, bool) {
				ready, known := c.ready.get(r.state.Key)
				return boolValue(ready), known
			}),
			owner(fqName("maintenance"),
				"Whether a maintenance window of the checker is open: 1 while its Maintenance condition is True, 0 while it is False; absent for a checker without windows. The shipped alerts and error budget rules leave a checker out while it is 1. Exported only by the replica that owns the checker.",
				func(r *checkerRow) (float64, bool) {
					open, known := c.ready.inMaintenance(r.state.Key)
					return boolValue(open), known
				}),
			owner(fqName("dependency_down"),
				"1 while the checker's Ready condition is False with reason DependencyDown: its own probes fail while a checker it depends on (spec.dependsOn) is down; absent otherwise. The shipped alerts do not page for a checker while it is 1. Exported only by the replica that owns the checker.",
				func(r *checkerRow) (float64, bool) {
					down, known := c.ready.dependencyDown(r.state.Key)
					return boolValue(down), known
				}))
	}
	families = append(families,
		probe(fqName("probe_success"),
			"Whether the latest probe of the checker by this replica succeeded (1) or failed (0); a certificate that expires soon is no failure here (see probe_ssl_earliest_cert_expiry). The checker's quorum state is webchecker_ready.",
			prometheus.GaugeValue, nil, gauge(func(r *checkerRow) float64 { return boolValue(r.state.Outcome.Result.Success) })),
		probe(fqName("probe_duration_seconds"),
			"Duration of the latest probe of the checker by this replica, end to end.",
			prometheus.GaugeValue, nil, gauge(func(r *checkerRow) float64 { return r.state.Outcome.Result.Duration.Seconds() })),
		probe(fqName("probe_http_status_code"),
			"HTTP status code of the final response in the latest probe of the checker by this replica; 0 when no response was received.",
			prometheus.GaugeValue, nil, gauge(func(r *checkerRow) float64 { return float64(r.state.Outcome.Result.StatusCode) })),
		probe(fqName("probe_last_run_timestamp_seconds"),
			"Unix time at which the latest probe of the checker by this replica finished.",
			prometheus.GaugeValue, nil, gauge(func(r *checkerRow) float64 { return float64(r.state.Outcome.Time.UnixNano()) / 1e9 })),
		probe(fqName("probes_total"),
			"Probes of the checker by this replica since it became one of its vantage points, by result (success or failure).",
			prometheus.CounterValue, []string{"result"}, func(r *checkerRow, yield func([]string, float64)) {
				yield(successLabel, float64(r.state.Counts.Successes))
				yield(failureLabel, float64(r.state.Counts.Failures))
			}),
		probe(fqName("probe_ssl_earliest_cert_expiry"),
			"Earliest expiry (NotAfter, Unix time) of the certificates the checker's server presented in the latest probe by this replica (of its verified chain; of all it sent when verification failed); absent for plain HTTP and when no certificate was received.",
			prometheus.GaugeValue, nil, func(r *checkerRow, yield func([]string, float64)) {
				if expiry := r.state.Outcome.Result.CertificateExpiry; expiry != nil {
					yield(nil, float64(expiry.Unix()))
				}
			}),
		probe(fqName("probe_ssl_last_chain_info"),
			"1 for the certificate the checker's server presented for itself in the latest probe by this replica, verified or not, as the blackbox exporter's: its SHA-256 fingerprint, serial number, and the common names of its issuer and subject when they are short printable names (empty otherwise); absent without a certificate.",
			prometheus.GaugeValue, []string{"fingerprint_sha256", "serialnumber", "issuer", "subject"}, func(r *checkerRow, yield func([]string, float64)) {
				if c := r.state.Outcome.Result.Certificate; c != nil {
					yield([]string{c.FingerprintSHA256, c.SerialNumber, c.Issuer, c.Subject}, 1)
				}
			}),
		probe(fqName("probe_ssl_cert_not_before"),
			"Start of validity (NotBefore, Unix time) of the certificate the checker's server presented for itself in the latest probe by this replica, verified or not; absent without a certificate.",
			prometheus.GaugeValue, nil, func(r *checkerRow, yield func([]string, float64)) {
				if c := r.state.Outcome.Result.Certificate; c != nil {
					yield(nil, float64(c.NotBefore.Unix()))
				}
			}),
		probe(fqName("probe_client_cert_expiry"),
			"Expiry (NotAfter, Unix time) of the client certificate (spec.tls.clientCertSecretRef) the checker presents, as of the latest probe by this replica; absent without one.",
			prometheus.GaugeValue, nil, func(r *checkerRow, yield func([]string, float64)) {
				if expiry := r.state.Outcome.Result.ClientCertificateExpiry; expiry != nil {
					yield(nil, float64(expiry.Unix()))
				}
			}),
		probe(fqName("probe_address_success"),
			"Whether the latest probe of each address of the checker's host name by this replica succeeded (1) or failed (0), labelled with the address; only for checkers whose spec.addresses is Any, All or Majority (probe_success is their verdict).",
			prometheus.GaugeValue, []string{"address"}, addressValues(func(a probing.AddressResult) float64 { return boolValue(a.Success) })),
		probe(fqName("probe_address_duration_seconds"),
			"Duration of the latest probe of each address of the checker's host name by this replica, labelled with the address; only for checkers whose spec.addresses is Any, All or Majority.",
			prometheus.GaugeValue, []string{"address"}, addressValues(func(a probing.AddressResult) float64 { return a.Duration.Seconds() })),
		shardGauge(prometheus.BuildFQName(Namespace, "shard", "owned_checkers"),
			"WebCheckers this replica owns: it writes their status, and probes them.",
			func(s *scrape) int { return s.owned }),
		shardGauge(prometheus.BuildFQName(Namespace, "shard", "probed_checkers"),
			"WebCheckers this replica probes as one of their vantage points, those it owns included.",
			func(s *scrape) int { return s.probed }),
	)
	for i := range families {
		f := &families[i]
		f.desc = prometheus.NewDesc(f.name, f.help, f.labels, nil)
		f.sorted = make([]int, len(f.labels))
		for i := range f.sorted {
			f.sorted[i] = i
		}
		slices.SortFunc(f.sorted, func(a, b int) int { return cmp.Compare(f.labels[a], f.labels[b]) })
	}
	return families
}

// familyBuilder makes the per-checker families of a collector whose
// owner's series have ownerLabels and probe series probeLabels (then
// their own).
type familyBuilder struct {
	ownerLabels, probeLabels []string
}

// owner is a family of the owner's series: value(r) for every row the
// replica owns, where it is known.
func (b familyBuilder) owner(name, help string, value func(r *checkerRow) (float64, bool)) checkerFamily {
	return checkerFamily{name: name, help: help, valueType: prometheus.GaugeValue, labels: b.ownerLabels,
		each: func(s *scrape, emit func([]string, float64)) {
			var labels []string
			for i := range s.rows {
				if r := &s.rows[i]; r.owns {
					if v, ok := value(r); ok {
						labels = r.appendLabels(labels[:0])
						emit(labels, v)
					}
				}
			}
		}}
}

// probe is a family of probe series: for every row the replica probed,
// one series per value that values(r) yields, whose own labels (after
// the vantage labels) are those of the family.
func (b familyBuilder) probe(name, help string, valueType prometheus.ValueType, own []string, values func(r *checkerRow, yield func(own []string, v float64))) checkerFamily {
	return checkerFamily{name: name, help: help + probeHelp, valueType: valueType, labels: slices.Concat(b.probeLabels, own),
		each: func(s *scrape, emit func([]string, float64)) {
			// One yield for every row (a closure made per row would be
			// allocated per row): it appends the series' own labels to
			// the row's, in the one slice the family reuses.
			var labels []string
			n := 0
			yield := func(own []string, v float64) {
				labels = append(labels[:n], own...)
				emit(labels, v)
			}
			for i := range s.rows {
				r := &s.rows[i]
				if !r.probed {
					continue
				}
				labels = append(r.appendLabels(labels[:0]), s.vantage...)
				n = len(labels)
				values(r, yield)
			}
		}}
}

// probeGauge is the one series of a probe family without labels of its
// own.
func probeGauge(value func(r *checkerRow) float64) func(r *checkerRow, yield func([]string, float64)) {
	return func(r *checkerRow, yield func([]string, float64)) { yield(nil, value(r)) }
}

// addressValues yields value of each address result of a row's latest
// probe, with the address as the series' own label.
func addressValues(value func(a probing.AddressResult) float64) func(r *checkerRow, yield func([]string, float64)) {
	return func(r *checkerRow, yield func([]string, float64)) {
		addrs := r.state.Outcome.Result.Addresses
		if len(addrs) == 0 {
			return // most checkers: nothing allocated for them
		}
		own := make([]string, 1)
		for _, a := range addrs {
			own[0] = a.Address.String()
			yield(own, value(a))
		}
	}
}

// shardGauge is a family of one series without labels.
func shardGauge(name, help string, n func(s *scrape) int) checkerFamily {
	return checkerFamily{name: name, help: help, valueType: prometheus.GaugeValue,
		each: func(s *scrape, emit func([]string, float64)) { emit(nil, float64(n(s))) }}
}

// successLabel and failureLabel are the result labels of probes_total.
var successLabel, failureLabel = []string{ResultSuccess}, []string{ResultFailure}

// fqName is the full name of a per-checker metric.
func fqName(name string) string { return prometheus.BuildFQName(Namespace, "", name) }
