package probing_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// startChainServer serves 200 over TLS, presenting chain.
func startChainServer(t *testing.T, chain tls.Certificate) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{chain}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// The certificate expiry is the verified chain's, not that of every
// certificate the server happens to send.
func TestHTTPProberCertificateExpiryFromVerifiedChain(t *testing.T) {
	t.Parallel()
	now := time.Now()
	days := func(n int) time.Time { return now.Add(time.Duration(n) * 24 * time.Hour) }
	issue := func(name string, notAfter time.Time, issuer *probetest.Certificate, mutate ...func(*probetest.CertificateTemplate)) probetest.Certificate {
		tmpl := probetest.CertificateTemplate{Name: name, NotBefore: days(-400), NotAfter: notAfter, Issuer: issuer}
		for _, m := range mutate {
			m(&tmpl)
		}
		return tmpl.Issue(t)
	}
	leaf := func(c *probetest.CertificateTemplate) { c.Leaf = true }
	keyOf := func(of probetest.Certificate) func(*probetest.CertificateTemplate) {
		return func(c *probetest.CertificateTemplate) { c.Key = of.Key }
	}

	root := issue("root.test", days(3650), nil)
	oldRoot := issue("old-root.test", days(3650), nil)     // not trusted
	shortRoot := issue("short-root.test", days(3650), nil) // trusted too
	inter := issue("intermediate.test", days(365), &root)
	// The same intermediate (subject and key) cross-signed by other roots:
	// one expired (by an untrusted root), one expiring in 10 days.
	expiredCross := issue("intermediate.test", days(-1), &oldRoot, keyOf(inter))
	shortCross := issue("intermediate.test", days(10), &shortRoot, keyOf(inter))
	server := issue("server.test", days(60), &inter, leaf)
	shortInter := issue("short-intermediate.test", days(20), &root)
	shortServer := issue("server.test", days(60), &shortInter, leaf)

	const month = 30 * 24 * time.Hour
	tests := map[string]struct {
		chain       tls.Certificate
		tls         probing.TLSOptions
		wantExpiry  time.Time
		wantReason  probing.Reason
		wantWarning string
	}{
		"an extra expired cross-sign, not needed for verification, does not count": {
			chain:      probetest.Chain(server, inter, expiredCross),
			tls:        probing.TLSOptions{RootCAs: root.PEM},
			wantExpiry: server.X509.NotAfter, wantReason: probing.ReasonSucceeded,
		},
		"of two verified chains, the one that lasts longest": {
			chain:      probetest.Chain(server, shortCross, inter),
			tls:        probing.TLSOptions{RootCAs: slices.Concat(root.PEM, shortRoot.PEM)},
			wantExpiry: server.X509.NotAfter, wantReason: probing.ReasonSucceeded,
		},
		"the chain's earliest expiry, an intermediate's": {
			chain:      probetest.Chain(shortServer, shortInter),
			tls:        probing.TLSOptions{RootCAs: root.PEM},
			wantExpiry: shortInter.X509.NotAfter, wantReason: probing.ReasonSucceeded,
			wantWarning: fmt.Sprintf(`a CA certificate of the server's chain expires at %s, in less than 720h0m0s`,
				shortInter.X509.NotAfter.UTC().Format(time.RFC3339)),
		},
		"insecureSkipVerify: the leaf": {
			chain:      probetest.Chain(server, inter, expiredCross),
			tls:        probing.TLSOptions{InsecureSkipVerify: true},
			wantExpiry: server.X509.NotAfter, wantReason: probing.ReasonSucceeded,
		},
	}
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := startChainServer(t, tc.chain)
			res := probe(t.Context(), prober, probing.TargetSpec{URL: srv.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout,
				TLS: tc.tls, CertExpiryWarning: month})
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			assert.Equal(t, tc.wantWarning, res.CertificateWarning)
			require.NotNil(t, res.CertificateExpiry, "%+v", res)
			assert.True(t, res.CertificateExpiry.Equal(tc.wantExpiry), "expiry %s, want %s", res.CertificateExpiry, tc.wantExpiry)
		})
	}
}
