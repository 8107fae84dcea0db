package probing_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// certificateCase is a server certificate and what a probe trusting
// roots says of it.
type certificateCase struct {
	leaf  probetest.Certificate
	roots []byte
	// wantMessage is part of the failure message; "" means success.
	wantMessage string
	// notInMessage must not appear in the message.
	notInMessage string
	wantIssuer   string
	wantExpiry   time.Time
}

// certificateCases are an expired, a not yet valid, an untrusted (its
// issuer's name kept), an untrusted with an issuer whose name is not printable (dropped),
// and a valid certificate, all from in-test CAs.
func certificateCases(t *testing.T) map[string]certificateCase {
	now := time.Now()
	ca := probetest.NewCertificate(t, "Test Root CA", now.Add(-30*24*time.Hour), now.Add(365*24*time.Hour))
	stranger := probetest.NewCertificate(t, "Stranger CA", now.Add(-time.Hour), now.Add(365*24*time.Hour))
	hostile := probetest.NewCertificate(t, `Evil" CA <secret=42>`, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	leaf := func(issuer *probetest.Certificate, notBefore, notAfter time.Time) probetest.Certificate {
		return probetest.CertificateTemplate{Name: "healthy.test", NotBefore: notBefore, NotAfter: notAfter, Issuer: issuer, Leaf: true}.Issue(t)
	}
	expired := leaf(&ca, now.Add(-20*24*time.Hour), now.Add(-3*24*time.Hour-time.Hour))
	early := leaf(&ca, now.Add(2*24*time.Hour+time.Hour), now.Add(90*24*time.Hour))
	untrusted := leaf(&stranger, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	hostileLeaf := leaf(&hostile, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	valid := leaf(&ca, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	return map[string]certificateCase{
		"expired": {leaf: expired, roots: ca.PEM, wantIssuer: "Test Root CA", wantExpiry: expired.X509.NotAfter,
			wantMessage: fmt.Sprintf("x509: the server's certificate expired at %s (3 days ago)", rfc(expired.X509.NotAfter))},
		"not yet valid": {leaf: early, roots: ca.PEM, wantIssuer: "Test Root CA", wantExpiry: early.X509.NotAfter,
			wantMessage: fmt.Sprintf("x509: the server's certificate is not valid before %s (in 2 days)", rfc(early.X509.NotBefore))},
		"untrusted": {leaf: untrusted, roots: ca.PEM, wantIssuer: "Stranger CA", wantExpiry: untrusted.X509.NotAfter,
			wantMessage: "x509: certificate signed by unknown authority", notInMessage: "Stranger"},
		"untrusted, issuer not printable": {leaf: hostileLeaf, roots: ca.PEM, wantExpiry: hostileLeaf.X509.NotAfter,
			wantMessage: "x509: certificate signed by unknown authority", notInMessage: "secret"},
		"valid": {leaf: valid, roots: ca.PEM, wantIssuer: "Test Root CA", wantExpiry: valid.X509.NotAfter},
	}
}

// TestCertificatesExplainThemselves: over https, tls and grpcs, a probe says why
// a certificate failed verification (expired or not yet valid, since or
// until when; an unknown authority, not named in the message) and reports
// the certificate the server presented, verified or not: its expiry,
// issuer and fingerprint.
func TestCertificatesExplainThemselves(t *testing.T) {
	t.Parallel()
	prober := probing.NewProber(probing.ProberOptions{DNSServer: newDNS(t).Addr()})
	t.Cleanup(prober.CloseIdleConnections)
	for name, tc := range certificateCases(t) {
		servers := map[string]string{}
		srv := startTLSServer(t, &tc.leaf, 0)
		u, err := url.Parse(srv.URL)
		require.NoError(t, err)
		servers["https"] = "https://healthy.test:" + u.Port() + "/"
		banner := probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &tc.leaf.TLS})
		servers["tls"] = "tls://" + banner.Addr()
		servers["grpcs"] = "grpcs://" + startGRPC(t, grpcServerOptions{cert: &tc.leaf}).addr
		for kind, target := range servers {
			t.Run(name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				spec := probing.TargetSpec{URL: target, Timeout: relaxedTimeout, TLS: probing.TLSOptions{RootCAs: tc.roots, ServerName: "healthy.test"}}
				if kind == "https" {
					spec.Method = "GET"
				}
				res := probe(context.Background(), prober, spec)
				if tc.wantMessage == "" {
					assert.Equal(t, probing.ReasonSucceeded, res.Reason, res.Message)
				} else {
					assert.Equal(t, probing.ReasonTLSError, res.Reason, res.Message)
					assert.Contains(t, res.Message, tc.wantMessage)
				}
				if tc.notInMessage != "" {
					assert.NotContains(t, res.Message, tc.notInMessage)
				}
				require.NotNil(t, res.CertificateExpiry, "the expiry is known, verified or not")
				assert.True(t, tc.wantExpiry.Equal(*res.CertificateExpiry), "expiry %v, want %v", *res.CertificateExpiry, tc.wantExpiry)
				require.NotNil(t, res.Certificate)
				sum := sha256.Sum256(tc.leaf.X509.Raw)
				assert.Equal(t, hex.EncodeToString(sum[:]), res.Certificate.FingerprintSHA256)
				assert.Equal(t, tc.wantIssuer, res.Certificate.Issuer)
				assert.Equal(t, "healthy.test", res.Certificate.Subject)
				assert.Equal(t, tc.leaf.X509.SerialNumber.Text(16), res.Certificate.SerialNumber)
				assert.True(t, tc.leaf.X509.NotBefore.Equal(res.Certificate.NotBefore))
				assert.Equal(t, tc.wantMessage == "", res.Certificate.Verified)
			})
		}
	}
}

// TestCertificateWithoutVerification: with InsecureSkipVerify an expired
// certificate is reported, not verified, and the probe succeeds.
func TestCertificateWithoutVerification(t *testing.T) {
	t.Parallel()
	now := time.Now()
	expired := probetest.NewCertificate(t, "healthy.test", now.Add(-10*24*time.Hour), now.Add(-24*time.Hour))
	srv := startTLSServer(t, &expired, tls.VersionTLS13)
	res := probe(context.Background(), newProber(t, newDNS(t), probing.ProberOptions{}), probing.TargetSpec{
		URL: srv.URL, Method: "GET", Timeout: relaxedTimeout, TLS: probing.TLSOptions{InsecureSkipVerify: true},
	})
	assert.Equal(t, probing.ReasonSucceeded, res.Reason, res.Message)
	require.NotNil(t, res.Certificate)
	assert.False(t, res.Certificate.Verified)
	assert.True(t, expired.X509.NotAfter.Equal(res.Certificate.NotAfter))
}
