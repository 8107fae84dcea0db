package metrics_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// perCheckerFamilies are the families the Exposition writes itself.
var perCheckerFamilies = []string{
	"webchecker_slo_objective", "webchecker_ready", "webchecker_probe_success", "webchecker_probe_duration_seconds",
	"webchecker_probe_http_status_code", "webchecker_probe_last_run_timestamp_seconds", "webchecker_probes_total",
	"webchecker_probe_ssl_earliest_cert_expiry", "webchecker_probe_ssl_last_chain_info", "webchecker_probe_ssl_cert_not_before", "webchecker_probe_client_cert_expiry", "webchecker_probe_address_success", "webchecker_probe_address_duration_seconds", "webchecker_shard_owned_checkers", "webchecker_shard_probed_checkers",
}

// exposedSources are checkers of every kind an exposition meets: owned
// and probed (with a certificate), owned and failing, owned and not probed
// yet, probed as a vantage point without owning it, neither, and label
// values that need escaping.
func exposedSources() (*fakeSources, *metrics.CheckerLabels, *metrics.ReadyStates) {
	quoted := types.NamespacedName{Namespace: "shop", Name: "quoted"}
	vantage := types.NamespacedName{Namespace: "ops", Name: "vantage"}
	elsewhere := types.NamespacedName{Namespace: "ops", Name: "elsewhere"}
	src := &fakeSources{
		states: []scheduler.CheckState{
			state(keyB, probing.Result{Reason: probing.ReasonConnectionFailed, Duration: 2 * time.Second, Addresses: []probing.AddressResult{
				{Address: netip.MustParseAddr("127.0.0.2"), Reason: probing.ReasonTimeout, Duration: time.Second},
				{Address: netip.MustParseAddr("fe80::1"), Success: true, Duration: time.Millisecond},
			}}, 0, 3),
			state(keyA, probing.Result{Success: true, Reason: probing.ReasonSucceeded, StatusCode: 200, Duration: 250 * time.Millisecond, CertificateExpiry: &certExpiry, ClientCertificateExpiry: &certExpiry,
				Certificate: &probing.Certificate{NotBefore: certStart, NotAfter: certExpiry, FingerprintSHA256: "9f86d081", SerialNumber: "1f", Issuer: `Shop "CA"\n`}}, 7, 1),
			{Key: keyC},
			state(quoted, probing.Result{Success: true, StatusCode: 204, Duration: 1500 * time.Microsecond}, 1e12, 0),
			state(vantage, probing.Result{Success: true, StatusCode: 200, Duration: time.Millisecond}, 2, 0),
			state(elsewhere, probing.Result{Success: true}, 5, 5),
		},
		inFlight: 1,
		owned:    map[types.NamespacedName]bool{keyA: true, keyB: true, keyC: true, quoted: true},
		probed:   map[types.NamespacedName]bool{vantage: true},
		members:  []string{"a", "b"},
		shard:    "a",
		zone:     `zone "1"\north`,
	}
	src.states[4].VantagePoints = 3
	labels, err := metrics.NewCheckerLabels([]string{"team"})
	if err != nil {
		panic(err)
	}
	labels.Set(keyA, map[string]string{"team": "payments", webcheckerv1alpha1.SLOObjectiveLabel: "0.999"})
	labels.Set(quoted, map[string]string{"team": `back\slash "quoted"`})
	ready := metrics.NewReadyStates()
	ready.Set(keyA, metav1.ConditionTrue)
	ready.Set(keyB, metav1.ConditionFalse)
	return src, labels, ready
}

// TestExpositionWritesWhatTheCollectorGathers checks that the text the
// Exposition writes is exactly what a registry gathers from the same
// sources: the same families, series, labels, values and help.
func TestExpositionWritesWhatTheCollectorGathers(t *testing.T) {
	src, labels, ready := exposedSources()
	gathered := prometheus.NewPedanticRegistry()
	require.NoError(t, metrics.New().Register(gathered, src, src, labels, ready))
	exp := metrics.NewExposition()
	require.NoError(t, metrics.New().RegisterStreamed(prometheus.NewRegistry(), exp, src, src, labels, ready))

	var text bytes.Buffer
	require.NoError(t, exp.WriteText(&text))
	require.NoError(t, testutil.GatherAndCompare(gathered, bytes.NewReader(text.Bytes()), perCheckerFamilies...), "streamed:\n%s", text.String())

	families, err := parseText(bytes.NewReader(text.Bytes()))
	require.NoError(t, err, "the text parses")
	assert.Len(t, families, len(perCheckerFamilies), "every family once")
	assert.Contains(t, text.String(), `webchecker_probes_total{label_team="back\\slash \"quoted\"",name="quoted",namespace="shop",result="success",shard="a",zone="zone \"1\"\\north"} 1e+12`, "labels sorted by name, values escaped")
}

// TestExpositionBeforeRegistering checks that an Exposition writes nothing
// of its own until it has sources.
func TestExpositionBeforeRegistering(t *testing.T) {
	var text bytes.Buffer
	require.NoError(t, metrics.NewExposition().WriteText(&text))
	assert.Empty(t, text.String())
}

// TestExpositionHandler checks what the manager serves on /metrics: the
// registry's series and the per-checker ones in one text exposition,
// compressed when asked, and an error of the registry's handler as it is.
func TestExpositionHandler(t *testing.T) {
	src, labels, ready := exposedSources()
	reg := prometheus.NewPedanticRegistry()
	exp := metrics.NewExposition()
	require.NoError(t, metrics.New().RegisterStreamed(reg, exp, src, src, labels, ready))
	registryHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(exp.Handler(registryHandler))
	t.Cleanup(srv.Close)

	tests := map[string]struct {
		accept, acceptEncoding string
		wantGzip               bool
	}{
		"plain text":                           {accept: "text/plain"},
		"Prometheus asking for protobuf first": {accept: "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1", acceptEncoding: "gzip", wantGzip: true},
		"gzip refused":                         {acceptEncoding: "gzip;q=0, identity"},
		"gzip among others":                    {acceptEncoding: "br;q=1.0, gzip;q=0.8, *;q=0.1", wantGzip: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/metrics", nil)
			require.NoError(t, err)
			req.Header.Set("Accept", tc.accept)
			req.Header.Set("Accept-Encoding", tc.acceptEncoding) // set: the transport adds none of its own
			resp, err := srv.Client().Transport.RoundTrip(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
			body := io.Reader(resp.Body)
			if tc.wantGzip {
				require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
				gz, err := gzip.NewReader(resp.Body)
				require.NoError(t, err)
				body = gz
			} else {
				require.Empty(t, resp.Header.Get("Content-Encoding"))
			}
			families, err := parseText(body)
			require.NoError(t, err)
			for _, name := range append([]string{"webchecker_scheduler_inflight", "webchecker_shard_members", "webchecker_probe_latency_seconds"}, perCheckerFamilies...) {
				assert.Contains(t, families, name)
			}
			assert.Len(t, families["webchecker_probe_success"].GetMetric(), 4, "owned and probed, failing, quoted, vantage point")
		})
	}

	t.Run("an error of the registry's handler", func(t *testing.T) {
		failing := exp.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "gathering failed", http.StatusInternalServerError)
		}))
		rec := httptest.NewRecorder()
		failing.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Equal(t, "gathering failed\n", rec.Body.String())
	})
}

// TestExpositionScrapeMemory checks the reason the Exposition exists: a
// scrape of 3,000 probed checkers allocates a few dozen times (the
// snapshot, the rows, buffers), not once or more per series as gathering
// them through a registry does.
func TestExpositionScrapeMemory(t *testing.T) {
	src := &fakeSources{owned: map[types.NamespacedName]bool{}, shard: "a", zone: "zone-1"}
	for i := range 3000 {
		key := types.NamespacedName{Namespace: "team-" + strings.Repeat("x", i%7), Name: "checker-" + string(rune('a'+i%26)) + time.Duration(i).String()}
		src.states = append(src.states, state(key, probing.Result{Success: true, StatusCode: 200, Duration: time.Millisecond}, uint64(i), 1))
		src.owned[key] = true
	}
	ready := metrics.NewReadyStates()
	gathered := prometheus.NewRegistry()
	require.NoError(t, metrics.New().Register(gathered, src, src, nil, ready))
	exp := metrics.NewExposition()
	require.NoError(t, metrics.New().RegisterStreamed(prometheus.NewRegistry(), exp, src, src, nil, ready))

	gather := testing.AllocsPerRun(3, func() {
		_, err := gathered.Gather()
		require.NoError(t, err)
	})
	stream := testing.AllocsPerRun(3, func() { require.NoError(t, exp.WriteText(io.Discard)) })
	t.Logf("allocations per scrape of 3,000 checkers: gathered %.0f, streamed %.0f", gather, stream)
	// A few allocations per family (about 35 of them), none per series.
	assert.Less(t, stream, 150.0, "streaming allocates a few times per scrape, not per series")
	assert.Greater(t, gather, 3000.0*7, "gathering allocates per series")
}

// parseText parses a text exposition as Prometheus does.
func parseText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(r)
}
