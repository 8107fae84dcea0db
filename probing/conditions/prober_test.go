package conditions_test

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/conditions"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestWithHTTPProber probes a loopback HTTPS server with conditions: the
// prober keeps the body for a Judge that reads it, and a false condition
// fails the probe with ReasonConditionFailed.
func TestWithHTTPProber(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok","checks":[{"name":"db","healthy":true}]}`))
	}))
	t.Cleanup(srv.Close)
	dns := probetest.NewTestDNSServer(t, map[string][]net.IP{"healthy.test": {net.IPv4(127, 0, 0, 1)}})
	prober := probing.NewHTTPProber(probing.ProberOptions{DNSServer: dns.Addr()})
	t.Cleanup(prober.CloseIdleConnections)
	rootCAs := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	for name, tc := range map[string]struct {
		conds   []conditions.Condition
		success bool
		reason  probing.Reason
		message string
	}{
		"all hold": {
			conds: []conditions.Condition{
				{Expression: "response.code == 200 && response.headers['content-type'] == 'application/json'"},
				{Expression: "response.json.status == 'ok' && response.json.checks.all(c, c.healthy)"},
				{Expression: "tls.expiry - now > duration('24h') && tls.version in ['1.2', '1.3']"},
				{Expression: "latency < duration('10s')"},
			},
			success: true, reason: probing.ReasonSucceeded,
		},
		"json false": {
			conds:   []conditions.Condition{{Expression: "response.json.status == 'degraded'", Message: "not degraded"}},
			reason:  probing.ReasonConditionFailed,
			message: "not degraded",
		},
		"json key missing": {
			conds:   []conditions.Condition{{Expression: "response.json.version == '2'"}},
			reason:  probing.ReasonConditionFailed,
			message: `condition 1 ("response.json.version == '2'") could not be evaluated: no such key`,
		},
		"status false": {
			conds:   []conditions.Condition{{Expression: "response.code == 201"}},
			reason:  probing.ReasonConditionFailed,
			message: "condition 1 failed: response.code == 201",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j, err := conditions.Compile(probing.KindHTTP, tc.conds)
			require.NoError(t, err)
			target, err := probing.NewTarget(probing.TargetSpec{
				URL: srv.URL + "/health", Method: http.MethodGet, Timeout: 10 * time.Second,
				TLS: probing.TLSOptions{RootCAs: rootCAs}, Judge: j,
			})
			require.NoError(t, err)
			res := prober.Probe(t.Context(), target)
			assert.Equal(t, tc.success, res.Success, res.Message)
			assert.Equal(t, tc.reason, res.Reason)
			if !tc.success {
				assert.Equal(t, tc.message, res.Message)
			}
			assert.False(t, res.CertificateExpiry.IsZero(), "the certificate facts stay")
		})
	}
}
