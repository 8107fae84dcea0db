package probing_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestKindsThroughAProxy: tcp, tls and grpcs probes reach their servers
// through a CONNECT tunnel (the TLS handshake with the target happens in
// it), and a refused CONNECT is the proxy's failure, not the target's.
func TestKindsThroughAProxy(t *testing.T) {
	t.Parallel()
	cert := probetest.NewCertificate(t, "kinds.test", time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	banner := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	tlsBanner := probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &cert.TLS, Banner: "220 ready\r\n"})
	grpcs := startGRPC(t, grpcServerOptions{cert: &cert})
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{})
	refusing := probetest.NewTestProxy(t, probetest.ProxyOptions{RefuseConnect: true})
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})

	expect220 := &probing.TCPOptions{Expect: pattern.MustCompile("^220 "), MaxBytes: 1024}
	targets := map[string]probing.TargetSpec{
		"tcp":   {URL: "tcp://" + banner.Addr(), TCP: expect220},
		"tls":   {URL: "tls://" + tlsBanner.Addr(), TCP: expect220, TLS: probing.TLSOptions{RootCAs: cert.PEM}},
		"grpcs": {URL: "grpcs://" + grpcs.addr, TLS: probing.TLSOptions{RootCAs: cert.PEM}},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			target.Timeout = relaxedTimeout
			target.Proxy = &probing.Proxy{URL: proxy.URL()}
			res := probe(t.Context(), prober, target)
			require.True(t, res.Success, "%+v", res)
			if name != "tcp" {
				assert.NotNil(t, res.CertificateExpiry, "the target's certificate, through the tunnel")
			}

			target.Proxy = &probing.Proxy{URL: refusing.URL()}
			res = probe(t.Context(), prober, target)
			assert.Equal(t, probing.ReasonProxyFailed, res.Reason, "%+v", res)
			assert.Contains(t, res.Message, "403")
		})
	}
	assert.ElementsMatch(t, []string{banner.Addr(), tlsBanner.Addr(), grpcs.addr}, proxy.ConnectTargets())
}
