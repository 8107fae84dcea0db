package metrics

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Namespace prefixes every metric name.
const Namespace = "webchecker"

// Label values of the result label of webchecker_probes_total and
// webchecker_probe_latency_seconds.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

// WriteResult is the result label of webchecker_status_writes_total.
type WriteResult string

const (
	// WriteSucceeded: the status patch was accepted.
	WriteSucceeded WriteResult = "success"
	// WriteConflict: the patch lost an optimistic-concurrency race and is
	// retried after re-reading the object.
	WriteConflict WriteResult = "conflict"
	// WriteFailed: any other error.
	WriteFailed WriteResult = "error"
)

// latencyBuckets cover probes from sub-millisecond loopback answers to
// the longest timeouts people set (a minute).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// lagBuckets cover a healthy scheduler (well under 10ms late) up to one
// that is badly overloaded.
var lagBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Metrics keeps the operator's metrics. It is the scheduler's Observer and
// counts status writes. Its methods are safe for concurrent use.
type Metrics struct {
	probeLatency *prometheus.HistogramVec
	probePhase   *prometheus.HistogramVec
	schedulerLag prometheus.Histogram
	statusWrites *prometheus.CounterVec

	// The series every probe observes, looked up once in New rather than
	// by label values (hashed under a lock) on every probe.
	successLatency, failureLatency prometheus.Observer
	phases                         map[probing.Phase]prometheus.Observer
}

var _ scheduler.Observer = (*Metrics)(nil)

// New returns Metrics with every labelled series initialised to zero, so
// that rates and alerts work before the first event.
func New() *Metrics {
	m := &Metrics{
		probeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "probe_latency_seconds",
			Help:      "Duration of probes, end to end, of all checkers this replica probed, by result (success or failure).",
			Buckets:   latencyBuckets,
		}, []string{"result"}),
		probePhase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "probe_phase_seconds",
			Help:      "Duration of the phases of HTTP probes (dns, connect, tls, processing, transfer), of all checkers this replica probed; a phase a probe did not go through (no DNS for an IP address, no connect on a reused connection, no TLS for http) is not observed.",
			Buckets:   latencyBuckets,
		}, []string{"phase"}),
		schedulerLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "scheduler_lag_seconds",
			Help:      "How late probes started against the time they were due; it grows when the bound on probes in flight is reached (webchecker_scheduler_saturated).",
			Buckets:   lagBuckets,
		}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "status_writes_total",
			Help:      "WebChecker status patches sent to the API server, by result (success, conflict, error).",
		}, []string{"result"}),
	}
	m.successLatency = m.probeLatency.WithLabelValues(ResultSuccess)
	m.failureLatency = m.probeLatency.WithLabelValues(ResultFailure)
	m.phases = make(map[probing.Phase]prometheus.Observer, len(probing.Phases))
	for _, p := range probing.Phases {
		m.phases[p] = m.probePhase.WithLabelValues(string(p))
	}
	for _, r := range []WriteResult{WriteSucceeded, WriteConflict, WriteFailed} {
		m.statusWrites.WithLabelValues(string(r))
	}
	return m
}

// ProbeStarted observes the scheduler lag.
func (m *Metrics) ProbeStarted(_ types.NamespacedName, lag time.Duration) {
	m.schedulerLag.Observe(lag.Seconds())
}

// ProbeFinished observes the probe's latency and phases.
func (m *Metrics) ProbeFinished(o scheduler.Outcome) {
	res := o.Result
	latency := m.failureLatency
	if res.Success {
		latency = m.successLatency
	}
	latency.Observe(res.Duration.Seconds())
	for phase, d := range res.Phases.All() {
		m.phases[phase].Observe(d.Seconds())
	}
}

// StatusWritten counts one status patch that returned err: WriteSucceeded
// for nil, WriteConflict for a conflict (apierrors.IsConflict),
// WriteFailed for any other error.
func (m *Metrics) StatusWritten(err error) {
	m.statusWrites.WithLabelValues(string(writeResultOf(err))).Inc()
}

// writeResultOf is the result of a status patch that returned err.
func writeResultOf(err error) WriteResult {
	switch {
	case err == nil:
		return WriteSucceeded
	case apierrors.IsConflict(err):
		return WriteConflict
	default:
		return WriteFailed
	}
}

// CheckSource is what the metrics read of the probe scheduler at scrape
// time.
type CheckSource interface {
	// SnapshotOf returns the state of the checks keep reports true for
	// (see scheduler.Scheduler.SnapshotOf).
	SnapshotOf(keep func(key types.NamespacedName, vantagePoints int) bool) []scheduler.CheckState
	InFlight() int
	// Load returns how the scheduler keeps up with its checks (see
	// scheduler.Scheduler.Load).
	Load() scheduler.Load
}

// ShardSource is what the metrics read of the replica's shard at scrape
// time (a sharding.Assigner).
type ShardSource interface {
	// Owns reports whether this replica owns the checker now.
	Owns(key types.NamespacedName) bool
	// Members returns the live members of the ring.
	Members() []string
	// Rebalances counts the ring's membership changes.
	Rebalances() uint64
	// Fenced reports whether this replica has fenced itself (it could not
	// renew its Lease in time): it probes and writes nothing until it can.
	Fenced() bool
	// Fencings counts the times this replica fenced itself after it had
	// joined the ring.
	Fencings() uint64
	// RingChanged returns when this replica's view of the ring (members,
	// zones or its own fencing) last changed; zero before it first looked.
	RingChanged() time.Time
	// Probes reports whether this replica is one of the vantage points of
	// the checker, which asks for vantagePoints of them (its
	// spec.vantagePoints, at least 1), and is not fenced: it probes the
	// checker now. The owner is one of them.
	Probes(key types.NamespacedName, vantagePoints int) bool
	// ShardID returns this replica's shard id, the shard label of the
	// probe series.
	ShardID() string
	// Zone returns this replica's zone (its --zone), the zone label of the
	// probe series; empty when unknown.
	Zone() string
}

// Register registers m, and the metrics read at scrape time from checks
// and shard, on reg. The per-checker series carry the labels of labels
// (nil: none). webchecker_ready exports the quorum states of ready for
// the checkers this replica owns (nil: no webchecker_ready series).
func (m *Metrics) Register(reg prometheus.Registerer, checks CheckSource, shard ShardSource, labels *CheckerLabels, ready *ReadyStates) error {
	checkers, err := m.register(reg, checks, shard, labels, ready)
	if err != nil {
		return err
	}
	if err := reg.Register(checkers); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	return nil
}

// RegisterStreamed is Register, but for the per-checker series and the
// shard gauges that count them, which exp writes itself instead (see
// Exposition): what the manager serves.
func (m *Metrics) RegisterStreamed(reg prometheus.Registerer, exp *Exposition, checks CheckSource, shard ShardSource, labels *CheckerLabels, ready *ReadyStates) error {
	checkers, err := m.register(reg, checks, shard, labels, ready)
	if err != nil {
		return err
	}
	exp.checkers.Store(checkers)
	return nil
}

// register registers every metric on reg but the checker collector, which
// it returns.
func (m *Metrics) register(reg prometheus.Registerer, checks CheckSource, shard ShardSource, labels *CheckerLabels, ready *ReadyStates) (*checkerCollector, error) {
	if checks == nil || shard == nil {
		return nil, errors.New("registering metrics: a check source and a shard source are required")
	}
	collectors := []prometheus.Collector{
		m.probeLatency, m.probePhase, m.schedulerLag, m.statusWrites,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "scheduler_inflight",
			Help:      "Probes running now.",
		}, func() float64 { return float64(checks.InFlight()) }),
		newLoadCollector(checks),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "shard_members",
			Help:      "Live replicas on the consistent-hash ring, as this replica sees it.",
		}, func() float64 { return float64(len(shard.Members())) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "shard_rebalances_total",
			Help:      "Changes of the ring's membership seen by this replica; each one moves checkers between replicas.",
		}, func() float64 { return float64(shard.Rebalances()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "shard_fenced",
			Help:      "1 while this replica is fenced: it could not renew its Lease in time (or has not joined the ring yet), and probes and writes nothing until it does; 0 otherwise.",
		}, func() float64 { return boolValue(shard.Fenced()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "shard_fencings_total",
			Help:      "Times this replica fenced itself after it had joined the ring (the fencing it starts in does not count).",
		}, func() float64 { return float64(shard.Fencings()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace,
			Name:      "shard_ring_changed_timestamp_seconds",
			Help:      "Unix time at which this replica's view of the ring (its members, their zones, or its own fencing) last changed; 0 before it first looked.",
		}, func() float64 { return unixSeconds(shard.RingChanged()) }),
		&ringMembers{shard: shard, desc: prometheus.NewDesc(Namespace+"_shard_member",
			"1 for each live replica on the consistent-hash ring as this replica sees it, labelled with its shard id; a replica that left has no series.",
			[]string{"member"}, nil)},
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	return newCheckerCollector(checks, shard, labels, ready), nil
}

// ringMembers exports the ring's members as this replica sees them, one
// webchecker_shard_member series each: as many as there are replicas.
type ringMembers struct {
	shard ShardSource
	desc  *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (r *ringMembers) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }

// Collect implements prometheus.Collector.
func (r *ringMembers) Collect(ch chan<- prometheus.Metric) {
	for _, m := range r.shard.Members() {
		ch <- prometheus.MustNewConstMetric(r.desc, prometheus.GaugeValue, 1, m)
	}
}

// unixSeconds is t in Unix seconds, 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// boolValue is 1 for true and 0 for false.
func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
