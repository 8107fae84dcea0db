package metrics_test

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// fakeSources stands in for the scheduler and the assigner: both are this
// project's own code, tested on their own.
type fakeSources struct {
	mu       sync.Mutex
	states   []scheduler.CheckState
	inFlight int
	load     scheduler.Load
	owned    map[types.NamespacedName]bool
	// probed are the checkers this replica probes without owning them;
	// it probes those it owns too.
	probed     map[types.NamespacedName]bool
	members    []string
	rebalances uint64
	// fenced: as the Assigner, the replica then owns and probes nothing.
	fenced      bool
	fencings    uint64
	ringChanged time.Time
	shard, zone string
	// asked records the vantage points Probes was last asked with.
	asked map[types.NamespacedName]int
}

func (f *fakeSources) SnapshotOf(keep func(types.NamespacedName, int) bool) []scheduler.CheckState {
	f.mu.Lock()
	states := append([]scheduler.CheckState(nil), f.states...)
	f.mu.Unlock()
	// Called without the lock, as the scheduler calls keep: keep asks
	// Owns and Probes, which take it.
	return slices.DeleteFunc(states, func(st scheduler.CheckState) bool { return keep != nil && !keep(st.Key, st.VantagePoints) })
}

func (f *fakeSources) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

func (f *fakeSources) Load() scheduler.Load {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load
}

func (f *fakeSources) Owns(key types.NamespacedName) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.fenced && f.owned[key]
}

func (f *fakeSources) Probes(key types.NamespacedName, vantagePoints int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asked == nil {
		f.asked = map[types.NamespacedName]int{}
	}
	f.asked[key] = vantagePoints
	return !f.fenced && (f.owned[key] || f.probed[key])
}

func (f *fakeSources) ShardID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shard
}

func (f *fakeSources) Zone() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.zone
}

func (f *fakeSources) Members() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members
}

func (f *fakeSources) Rebalances() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rebalances
}

func (f *fakeSources) Fenced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fenced
}

func (f *fakeSources) Fencings() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fencings
}

func (f *fakeSources) RingChanged() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ringChanged
}

func (f *fakeSources) set(change func(f *fakeSources)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

var (
	keyA = types.NamespacedName{Namespace: "shop", Name: "payments"}
	keyB = types.NamespacedName{Namespace: "shop", Name: "search"}
	keyC = types.NamespacedName{Namespace: "ops", Name: "not-yet-probed"}
	// finished is when the latest probes finished: 1767268800.5 seconds.
	finished = time.Date(2026, 1, 1, 12, 0, 0, 500_000_000, time.UTC)
	// certExpiry is when keyA's certificate expires: 1769904000.
	certExpiry = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	// certStart is when keyA's certificate became valid: 1764547200.
	certStart = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
)

func state(key types.NamespacedName, res probing.Result, successes, failures uint64) scheduler.CheckState {
	return scheduler.CheckState{
		Key:        key,
		Outcome:    scheduler.Outcome{Key: key, Generation: 1, Result: res, Time: finished},
		HasOutcome: true,
		Counts:     scheduler.ProbeCounts{Successes: successes, Failures: failures},
	}
}

func newRegistered(t *testing.T) (*metrics.Metrics, *fakeSources, *prometheus.Registry) {
	t.Helper()
	src := &fakeSources{
		states: []scheduler.CheckState{
			state(keyA, probing.Result{Success: true, Reason: probing.ReasonSucceeded, StatusCode: 200, Duration: 250 * time.Millisecond, CertificateExpiry: &certExpiry, ClientCertificateExpiry: &certExpiry,
				Certificate: &probing.Certificate{NotBefore: certStart, NotAfter: certExpiry, FingerprintSHA256: "9f86d081", SerialNumber: "1f", Issuer: "Shop CA", Verified: true}}, 7, 1),
			state(keyB, probing.Result{Reason: probing.ReasonConnectionFailed, Duration: 2 * time.Second, Addresses: []probing.AddressResult{
				{Address: netip.MustParseAddr("127.0.0.1"), Success: true, Reason: probing.ReasonSucceeded, Duration: 20 * time.Millisecond},
				{Address: netip.MustParseAddr("::1"), Reason: probing.ReasonConnectionFailed, Message: "refused", Duration: 2 * time.Second},
			}}, 0, 3),
			{Key: keyC},
		},
		inFlight:   2,
		owned:      map[types.NamespacedName]bool{keyA: true, keyB: true, keyC: true},
		members:    []string{"a", "b", "c"},
		rebalances: 4,
		shard:      "a",
		zone:       "zone-1",
	}
	m := metrics.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, m.Register(reg, src, src, nil, nil))
	return m, src, reg
}

// probeHelp ends the help of every probe series.
const probeHelp = " Exported, once it has probed the checker, by every replica that probes it (its vantage points: spec.vantagePoints of them, the owner alone by default), labelled with the replica's shard id and zone (empty when unknown)."

const checkerHeader = `
# HELP webchecker_probe_success Whether the latest probe of the checker by this replica succeeded (1) or failed (0); a certificate that expires soon is no failure here (see probe_ssl_earliest_cert_expiry). The checker's quorum state is webchecker_ready.` + probeHelp + `
# TYPE webchecker_probe_success gauge
`

// checkerMetricsWant is what the registry of newRegistered exports, before
// any change to its sources.
const checkerMetricsWant = `
# HELP webchecker_probe_address_duration_seconds Duration of the latest probe of each address of the checker's host name by this replica, labelled with the address; only for checkers whose spec.addresses is Any, All or Majority.` + probeHelp + `
# TYPE webchecker_probe_address_duration_seconds gauge
webchecker_probe_address_duration_seconds{address="127.0.0.1",name="search",namespace="shop",shard="a",zone="zone-1"} 0.02
webchecker_probe_address_duration_seconds{address="::1",name="search",namespace="shop",shard="a",zone="zone-1"} 2
# HELP webchecker_probe_address_success Whether the latest probe of each address of the checker's host name by this replica succeeded (1) or failed (0), labelled with the address; only for checkers whose spec.addresses is Any, All or Majority (probe_success is their verdict).` + probeHelp + `
# TYPE webchecker_probe_address_success gauge
webchecker_probe_address_success{address="127.0.0.1",name="search",namespace="shop",shard="a",zone="zone-1"} 1
webchecker_probe_address_success{address="::1",name="search",namespace="shop",shard="a",zone="zone-1"} 0
# HELP webchecker_probe_client_cert_expiry Expiry (NotAfter, Unix time) of the client certificate (spec.tls.clientCertSecretRef) the checker presents, as of the latest probe by this replica; absent without one.` + probeHelp + `
# TYPE webchecker_probe_client_cert_expiry gauge
webchecker_probe_client_cert_expiry{name="payments",namespace="shop",shard="a",zone="zone-1"} 1.769904e+09
# HELP webchecker_probe_duration_seconds Duration of the latest probe of the checker by this replica, end to end.` + probeHelp + `
# TYPE webchecker_probe_duration_seconds gauge
webchecker_probe_duration_seconds{name="payments",namespace="shop",shard="a",zone="zone-1"} 0.25
webchecker_probe_duration_seconds{name="search",namespace="shop",shard="a",zone="zone-1"} 2
# HELP webchecker_probe_http_status_code HTTP status code of the final response in the latest probe of the checker by this replica; 0 when no response was received.` + probeHelp + `
# TYPE webchecker_probe_http_status_code gauge
webchecker_probe_http_status_code{name="payments",namespace="shop",shard="a",zone="zone-1"} 200
webchecker_probe_http_status_code{name="search",namespace="shop",shard="a",zone="zone-1"} 0
# HELP webchecker_probe_last_run_timestamp_seconds Unix time at which the latest probe of the checker by this replica finished.` + probeHelp + `
# TYPE webchecker_probe_last_run_timestamp_seconds gauge
webchecker_probe_last_run_timestamp_seconds{name="payments",namespace="shop",shard="a",zone="zone-1"} 1.7672688005e+09
webchecker_probe_last_run_timestamp_seconds{name="search",namespace="shop",shard="a",zone="zone-1"} 1.7672688005e+09
# HELP webchecker_probe_ssl_cert_not_before Start of validity (NotBefore, Unix time) of the certificate the checker's server presented for itself in the latest probe by this replica, verified or not; absent without a certificate.` + probeHelp + `
# TYPE webchecker_probe_ssl_cert_not_before gauge
webchecker_probe_ssl_cert_not_before{name="payments",namespace="shop",shard="a",zone="zone-1"} 1.7645472e+09
# HELP webchecker_probe_ssl_earliest_cert_expiry Earliest expiry (NotAfter, Unix time) of the certificates the checker's server presented in the latest probe by this replica (of its verified chain; of all it sent when verification failed); absent for plain HTTP and when no certificate was received.` + probeHelp + `
# TYPE webchecker_probe_ssl_earliest_cert_expiry gauge
webchecker_probe_ssl_earliest_cert_expiry{name="payments",namespace="shop",shard="a",zone="zone-1"} 1.769904e+09
# HELP webchecker_probe_ssl_last_chain_info 1 for the certificate the checker's server presented for itself in the latest probe by this replica, verified or not, as the blackbox exporter's: its SHA-256 fingerprint, serial number, and the common names of its issuer and subject when they are short printable names (empty otherwise); absent without a certificate.` + probeHelp + `
# TYPE webchecker_probe_ssl_last_chain_info gauge
webchecker_probe_ssl_last_chain_info{fingerprint_sha256="9f86d081",issuer="Shop CA",name="payments",namespace="shop",serialnumber="1f",shard="a",subject="",zone="zone-1"} 1
` + checkerHeader + `webchecker_probe_success{name="payments",namespace="shop",shard="a",zone="zone-1"} 1
webchecker_probe_success{name="search",namespace="shop",shard="a",zone="zone-1"} 0
# HELP webchecker_probes_total Probes of the checker by this replica since it became one of its vantage points, by result (success or failure).` + probeHelp + `
# TYPE webchecker_probes_total counter
webchecker_probes_total{name="payments",namespace="shop",result="failure",shard="a",zone="zone-1"} 1
webchecker_probes_total{name="payments",namespace="shop",result="success",shard="a",zone="zone-1"} 7
webchecker_probes_total{name="search",namespace="shop",result="failure",shard="a",zone="zone-1"} 3
webchecker_probes_total{name="search",namespace="shop",result="success",shard="a",zone="zone-1"} 0
# HELP webchecker_shard_owned_checkers WebCheckers this replica owns: it writes their status, and probes them.
# TYPE webchecker_shard_owned_checkers gauge
webchecker_shard_owned_checkers 3
# HELP webchecker_shard_probed_checkers WebCheckers this replica probes as one of their vantage points, those it owns included.
# TYPE webchecker_shard_probed_checkers gauge
webchecker_shard_probed_checkers 3
# HELP webchecker_shard_members Live replicas on the consistent-hash ring, as this replica sees it.
# TYPE webchecker_shard_members gauge
webchecker_shard_members 3
# HELP webchecker_shard_rebalances_total Changes of the ring's membership seen by this replica; each one moves checkers between replicas.
# TYPE webchecker_shard_rebalances_total counter
webchecker_shard_rebalances_total 4
# HELP webchecker_shard_fenced 1 while this replica is fenced: it could not renew its Lease in time (or has not joined the ring yet), and probes and writes nothing until it does; 0 otherwise.
# TYPE webchecker_shard_fenced gauge
webchecker_shard_fenced 0
# HELP webchecker_shard_fencings_total Times this replica fenced itself after it had joined the ring (the fencing it starts in does not count).
# TYPE webchecker_shard_fencings_total counter
webchecker_shard_fencings_total 0
# HELP webchecker_scheduler_inflight Probes running now.
# TYPE webchecker_scheduler_inflight gauge
webchecker_scheduler_inflight 2
`

func TestCheckerMetrics(t *testing.T) {
	_, src, reg := newRegistered(t)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(checkerMetricsWant),
		"webchecker_probe_duration_seconds", "webchecker_probe_http_status_code", "webchecker_probe_last_run_timestamp_seconds",
		"webchecker_probe_success", "webchecker_probes_total", "webchecker_probe_ssl_earliest_cert_expiry", "webchecker_shard_owned_checkers", "webchecker_shard_probed_checkers",
		"webchecker_shard_members", "webchecker_shard_rebalances_total", "webchecker_shard_fenced", "webchecker_shard_fencings_total", "webchecker_scheduler_inflight"))

	src.set(func(f *fakeSources) { f.fenced, f.fencings = true, 1 })
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP webchecker_shard_fenced 1 while this replica is fenced: it could not renew its Lease in time (or has not joined the ring yet), and probes and writes nothing until it does; 0 otherwise.
# TYPE webchecker_shard_fenced gauge
webchecker_shard_fenced 1
# HELP webchecker_shard_fencings_total Times this replica fenced itself after it had joined the ring (the fencing it starts in does not count).
# TYPE webchecker_shard_fencings_total counter
webchecker_shard_fencings_total 1
`), "webchecker_shard_fenced", "webchecker_shard_fencings_total"), "a fenced replica says so")
	assert.Zero(t, testutil.CollectAndCount(reg, "webchecker_probe_success"), "a fenced replica owns and probes nothing")
	src.set(func(f *fakeSources) { f.fenced = false })

	// The series of a checker follow its ownership and its presence in the
	// scheduler at every scrape: nothing lingers.
	tests := map[string]struct {
		change func(f *fakeSources)
		want   string
	}{
		"lost to another replica": {
			change: func(f *fakeSources) { f.owned[keyB] = false },
			want:   checkerHeader + `webchecker_probe_success{name="payments",namespace="shop",shard="a",zone="zone-1"} 1` + "\n",
		},
		"deleted (removed from the scheduler)": {
			change: func(f *fakeSources) { f.states = f.states[:1] },
			want:   checkerHeader + `webchecker_probe_success{name="payments",namespace="shop",shard="a",zone="zone-1"} 1` + "\n",
		},
		"fenced: owns nothing": {
			change: func(f *fakeSources) { clear(f.owned) },
			want:   "",
		},
		"taken back": {
			change: func(f *fakeSources) { f.owned[keyB] = true },
			want:   checkerHeader + `webchecker_probe_success{name="payments",namespace="shop",shard="a",zone="zone-1"} 1` + "\n" + `webchecker_probe_success{name="search",namespace="shop",shard="a",zone="zone-1"} 0` + "\n",
		},
	}
	for _, name := range []string{"lost to another replica", "taken back", "deleted (removed from the scheduler)", "fenced: owns nothing"} {
		tc := tests[name]
		t.Run(name, func(t *testing.T) {
			src.set(tc.change)
			assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(tc.want), "webchecker_probe_success"))
		})
	}
	assert.Equal(t, 0, testutil.CollectAndCount(reg, "webchecker_probes_total", "webchecker_probe_duration_seconds"), "every per-checker series is gone")
	owned, err := testutil.GatherAndCount(reg, "webchecker_shard_owned_checkers")
	require.NoError(t, err)
	assert.Equal(t, 1, owned, "the owned-checkers gauge is always exported")
}

func TestObservedMetrics(t *testing.T) {
	m, _, reg := newRegistered(t)

	m.ProbeStarted(keyA, 3*time.Millisecond)
	m.ProbeStarted(keyA, 2*time.Second)
	m.ProbeFinished(scheduler.Outcome{Key: keyA, Result: probing.Result{Success: true, Duration: 30 * time.Millisecond, Phases: phaseTimings(map[probing.Phase]time.Duration{
		probing.PhaseDNS: time.Millisecond, probing.PhaseConnect: 2 * time.Millisecond, probing.PhaseProcessing: 20 * time.Millisecond, probing.PhaseTransfer: 4 * time.Millisecond,
	})}})
	m.ProbeFinished(scheduler.Outcome{Key: keyB, Result: probing.Result{Duration: 5 * time.Second, Phases: phaseTimings(map[probing.Phase]time.Duration{probing.PhaseConnect: 5 * time.Second})}})
	m.StatusWritten(nil)
	m.StatusWritten(nil)
	m.StatusWritten(apierrors.NewConflict(schema.GroupResource{Resource: "webcheckers"}, "a", errors.New("stale")))
	m.StatusWritten(apierrors.NewServiceUnavailable("unavailable"))

	tests := map[string]struct {
		metric string
		labels []string
		count  uint64
		sum    float64
	}{
		"latency of successes": {metric: "webchecker_probe_latency_seconds", labels: []string{"result", "success"}, count: 1, sum: 0.03},
		"latency of failures":  {metric: "webchecker_probe_latency_seconds", labels: []string{"result", "failure"}, count: 1, sum: 5},
		"dns phase":            {metric: "webchecker_probe_phase_seconds", labels: []string{"phase", "dns"}, count: 1, sum: 0.001},
		"connect phase":        {metric: "webchecker_probe_phase_seconds", labels: []string{"phase", "connect"}, count: 2, sum: 5.002},
		"tls phase: none":      {metric: "webchecker_probe_phase_seconds", labels: []string{"phase", "tls"}, count: 0, sum: 0},
		"scheduler lag":        {metric: "webchecker_scheduler_lag_seconds", count: 2, sum: 2.003},
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var found bool
			for _, f := range families {
				if f.GetName() != tc.metric {
					continue
				}
				for _, metric := range f.GetMetric() {
					if len(tc.labels) > 0 && (len(metric.GetLabel()) != 1 || metric.GetLabel()[0].GetName() != tc.labels[0] || metric.GetLabel()[0].GetValue() != tc.labels[1]) {
						continue
					}
					found = true
					assert.Equal(t, tc.count, metric.GetHistogram().GetSampleCount())
					assert.InDelta(t, tc.sum, metric.GetHistogram().GetSampleSum(), 1e-9)
				}
			}
			assert.True(t, found, "series missing: every label value is initialised")
		})
	}

	want := `
# HELP webchecker_status_writes_total WebChecker status patches sent to the API server, by result (success, conflict, error).
# TYPE webchecker_status_writes_total counter
webchecker_status_writes_total{result="conflict"} 1
webchecker_status_writes_total{result="error"} 1
webchecker_status_writes_total{result="success"} 2
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "webchecker_status_writes_total"))
}

// TestMetricNamesLint runs client_golang's port of promtool's linter over
// every metric, with data in every family.
func TestMetricNamesLint(t *testing.T) {
	m, _, reg := newRegistered(t)
	m.ProbeStarted(keyA, time.Millisecond)
	m.ProbeFinished(scheduler.Outcome{Key: keyA, Result: probing.Result{Success: true, Duration: time.Millisecond}})
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestRegisterTwiceFails(t *testing.T) {
	_, src, reg := newRegistered(t)
	err := metrics.New().Register(reg, src, src, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "registering metrics")
	assert.Error(t, metrics.New().Register(prometheus.NewRegistry(), nil, src, nil, nil))
}

// TestExpiringCertificateIsNoProbeFailure: a server that answers as
// expected with a certificate that expires soon is up (probe_success 1);
// its expiry is in probe_ssl_earliest_cert_expiry, for an alert of its own.
func TestExpiringCertificateIsNoProbeFailure(t *testing.T) {
	tests := map[string]struct {
		res  probing.Result
		want float64
	}{
		"succeeded":             {probing.Result{Success: true, Reason: probing.ReasonSucceeded, StatusCode: 200}, 1},
		"certificate expiring":  {probing.Result{Success: true, Reason: probing.ReasonSucceeded, StatusCode: 200, CertificateExpiry: &certExpiry, CertificateWarning: "expires soon"}, 1},
		"unexpected status":     {probing.Result{Reason: probing.ReasonUnexpectedStatus, StatusCode: 500, CertificateExpiry: &certExpiry}, 0},
		"TLS handshake refused": {probing.Result{Reason: probing.ReasonTLSError}, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src := &fakeSources{
				states: []scheduler.CheckState{state(keyA, tc.res, 0, 1)},
				owned:  map[types.NamespacedName]bool{keyA: true},
			}
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, metrics.New().Register(reg, src, src, nil, nil))
			want := fmt.Sprintf("%swebchecker_probe_success{name=\"payments\",namespace=\"shop\",shard=\"\",zone=\"\"} %g\n", checkerHeader, tc.want)
			assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "webchecker_probe_success"))
		})
	}
}

// phaseTimings holds the durations of phases.
func phaseTimings(phases map[probing.Phase]time.Duration) probing.PhaseTimings {
	var t probing.PhaseTimings
	for p, d := range phases {
		t.Add(p, d)
	}
	return t
}

// TestShardMemberFollowsTheRing: webchecker_shard_member has one series
// per member of the ring as the replica sees it, the series of a member
// that left is gone, and webchecker_shard_ring_changed_timestamp_seconds
// says when the view changed.
func TestShardMemberFollowsTheRing(t *testing.T) {
	const header = `
# HELP webchecker_shard_member 1 for each live replica on the consistent-hash ring as this replica sees it, labelled with its shard id; a replica that left has no series.
# TYPE webchecker_shard_member gauge
`
	_, src, reg := newRegistered(t)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(header+`webchecker_shard_member{member="a"} 1
webchecker_shard_member{member="b"} 1
webchecker_shard_member{member="c"} 1
`), "webchecker_shard_member"))

	src.set(func(f *fakeSources) { f.members, f.ringChanged = []string{"a", "c"}, finished })
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(header+`webchecker_shard_member{member="a"} 1
webchecker_shard_member{member="c"} 1
`), "webchecker_shard_member"), "a member that left keeps its series")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP webchecker_shard_ring_changed_timestamp_seconds Unix time at which this replica's view of the ring (its members, their zones, or its own fencing) last changed; 0 before it first looked.
# TYPE webchecker_shard_ring_changed_timestamp_seconds gauge
webchecker_shard_ring_changed_timestamp_seconds 1.7672688005e+09
`), "webchecker_shard_ring_changed_timestamp_seconds"))
}
