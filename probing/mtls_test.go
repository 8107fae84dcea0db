package probing_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// mtlsCase is a client certificate (nil: none) and what a probe of a
// server requiring one says.
type mtlsCase struct {
	client      *probetest.Certificate
	wantSuccess bool
	// wantText is part of the message (a failure) or of the
	// CertificateWarning (a success); "" wants no warning.
	wantText string
}

// TestMutualTLS: https and grpcs servers that require a client
// certificate from their CA accept a probe that presents a valid one,
// warn when it expires soon, and refuse one without or with an expired
// certificate, whose failure says when it expired. The certificate's
// expiry is reported either way.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	now := time.Now()
	serverCA := probetest.NewCertificate(t, "Server CA", now.Add(-time.Hour), now.Add(365*24*time.Hour))
	serverCert := probetest.CertificateTemplate{Name: "healthy.test", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(90 * 24 * time.Hour), Issuer: &serverCA, Leaf: true}.Issue(t)
	// A CA's extended key usages bound its leaves': the client CA's allow
	// client authentication.
	clientCA := probetest.CertificateTemplate{Name: "Client CA", NotBefore: now.Add(-30 * 24 * time.Hour), NotAfter: now.Add(365 * 24 * time.Hour), Client: true}.Issue(t)
	client := func(notAfter time.Time) *probetest.Certificate {
		c := probetest.CertificateTemplate{Name: "prober.test", NotBefore: now.Add(-20 * 24 * time.Hour), NotAfter: notAfter, Issuer: &clientCA, Leaf: true, Client: true}.Issue(t)
		return &c
	}
	valid, soon, expired := client(now.Add(60*24*time.Hour)), client(now.Add(3*24*time.Hour)), client(now.Add(-24*time.Hour))
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(clientCA.X509)

	httpsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	httpsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	httpsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	httpsSrv.StartTLS()
	t.Cleanup(httpsSrv.Close)
	u, err := url.Parse(httpsSrv.URL)
	require.NoError(t, err)
	grpcs := startGRPC(t, grpcServerOptions{cert: &serverCert, clientCAs: clientCAs})
	targets := map[string]probing.TargetSpec{
		"https": {URL: "https://healthy.test:" + u.Port() + "/", Method: http.MethodGet},
		"grpcs": {URL: "grpcs://healthy.test:" + grpcs.port},
	}

	rfc := func(t time.Time) string { return t.Truncate(time.Second).UTC().Format(time.RFC3339) }
	cases := map[string]mtlsCase{
		"valid":          {client: valid, wantSuccess: true},
		"expiring soon":  {client: soon, wantSuccess: true, wantText: fmt.Sprintf("the client certificate expires at %s, in less than 336h0m0s", rfc(soon.X509.NotAfter))},
		"no certificate": {},
		"expired":        {client: expired, wantText: fmt.Sprintf("(the client certificate expired at %s)", rfc(expired.X509.NotAfter))},
		"another CA's": {client: func() *probetest.Certificate {
			c := probetest.CertificateTemplate{Name: "prober.test", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), Client: true, Leaf: true}.Issue(t)
			return &c
		}()},
	}
	prober := probing.NewProber(probing.ProberOptions{DNSServer: newDNS(t).Addr()})
	t.Cleanup(prober.CloseIdleConnections)
	for kind, base := range targets {
		for name, tc := range cases {
			t.Run(kind+"/"+name, func(t *testing.T) {
				t.Parallel()
				spec := base
				spec.Timeout, spec.CertExpiryWarning = relaxedTimeout, 14*24*time.Hour
				spec.TLS = probing.TLSOptions{RootCAs: serverCA.PEM}
				if tc.client != nil {
					spec.TLS.ClientCertificate, spec.TLS.ClientKey = tc.client.PEM, probing.Secret(tc.client.KeyPEM(t))
				}
				res := probe(context.Background(), prober, spec)
				if tc.wantSuccess {
					assert.Equal(t, probing.ReasonSucceeded, res.Reason, res.Message)
					assert.Equal(t, tc.wantText, res.CertificateWarning)
				} else {
					assert.False(t, res.Success, "the server requires a valid client certificate: %+v", res)
					assert.Contains(t, res.Message, tc.wantText)
				}
				if tc.client == nil {
					assert.Nil(t, res.ClientCertificateExpiry)
					return
				}
				require.NotNil(t, res.ClientCertificateExpiry)
				assert.True(t, tc.client.X509.NotAfter.Equal(*res.ClientCertificateExpiry))
				assert.NotContains(t, res.Message, "PRIVATE KEY")
			})
		}
	}
}

// TestClientCertificateMustBeAPair: NewTarget refuses a client
// certificate without its key, a key without its certificate, and a key
// of another certificate, in words that show nothing of them.
func TestClientCertificateMustBeAPair(t *testing.T) {
	t.Parallel()
	now := time.Now()
	a := probetest.CertificateTemplate{Name: "a.test", NotBefore: now, NotAfter: now.Add(time.Hour), Leaf: true, Client: true}.Issue(t)
	b := probetest.CertificateTemplate{Name: "b.test", NotBefore: now, NotAfter: now.Add(time.Hour), Leaf: true, Client: true}.Issue(t)
	for name, tls := range map[string]probing.TLSOptions{
		"no key":          {ClientCertificate: a.PEM},
		"no certificate":  {ClientKey: probing.Secret(a.KeyPEM(t))},
		"another's key":   {ClientCertificate: a.PEM, ClientKey: probing.Secret(b.KeyPEM(t))},
		"not PEM":         {ClientCertificate: []byte("certificate"), ClientKey: "key-material"},
		"key as the cert": {ClientCertificate: a.KeyPEM(t), ClientKey: probing.Secret(a.PEM)},
	} {
		for _, url := range []string{"https://healthy.test/", "tls://healthy.test:443"} {
			t.Run(name+"/"+url, func(t *testing.T) {
				t.Parallel()
				spec := probing.TargetSpec{URL: url, Timeout: relaxedTimeout, TLS: tls}
				if url[:5] == "https" {
					spec.Method = http.MethodGet
				}
				_, err := probing.NewTarget(spec)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "the client certificate and key are not a PEM-encoded certificate and its private key")
				assert.NotContains(t, err.Error(), "key-material")
			})
		}
	}
}
