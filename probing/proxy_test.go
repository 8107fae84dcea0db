package probing_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

// Probes through an HTTP proxy (probetest.Proxy), with the prober of
// every kind. The proxies reach loopback addresses only.

const proxyPassword = "s3cret-pw"

// proxyTarget is a GET of url through proxy.
func proxyTarget(url string, proxy *probing.Proxy) probing.TargetSpec {
	return probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout, Proxy: proxy}
}

// proxyServers are a plain and a TLS server on one loopback IP, counting
// their requests, and the CA bundle that verifies the TLS one.
type proxyServers struct {
	plain, tls *httptest.Server
	rootCAs    []byte
	hits       atomic.Int64
}

func startProxyServers(t *testing.T, ip string) *proxyServers {
	t.Helper()
	s := &proxyServers{}
	s.plain = startServerOn(t, ip, &s.hits)
	cert := probetest.NewCertificate(t, "healthy.test", time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	s.rootCAs = cert.PEM
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	s.tls = &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { s.hits.Add(1) })},
		TLS:      &tls.Config{Certificates: []tls.Certificate{cert.TLS}},
	}
	s.tls.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake errors are expected
	s.tls.StartTLS()
	t.Cleanup(s.tls.Close)
	return s
}

// target is a GET of url (one of s's) through proxy, trusting s.tls's
// certificate, which is valid for healthy.test (and 127.0.0.1, not
// 127.0.0.2).
func (s *proxyServers) target(url string, proxy *probing.Proxy) probing.TargetSpec {
	t := proxyTarget(url, proxy)
	if strings.HasPrefix(url, "https:") {
		t.TLS.RootCAs, t.TLS.ServerName = s.rootCAs, "healthy.test"
	}
	return t
}

// hostPort returns srv's host:port.
func hostPort(srv *httptest.Server) string { return srv.Listener.Addr().String() }

func TestProxyHTTPAbsoluteForm(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	srv, rec := recordingServer(t)
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{DNSServer: dns.Addr(), Username: "user", Password: proxyPassword})
	prober := newKindProber(t, dns, probing.ProberOptions{})

	url := byName(t, srv) + "/health?full=1"
	res := probe(t.Context(), prober, proxyTarget(url, &probing.Proxy{URL: proxy.URL(), Username: "user", Password: proxyPassword}))
	assert.True(t, res.Success, "%+v", res)
	assert.Equal(t, []string{url}, proxy.ForwardedURLs(), "the request line in absolute form")
	assert.Empty(t, proxy.ConnectTargets())
	assert.EqualValues(t, 1, proxy.Requests())
	method, host, header, _ := rec.get()
	assert.Equal(t, http.MethodGet, method)
	assert.Equal(t, strings.TrimPrefix(byName(t, srv), "http://"), host)
	assert.Empty(t, header.Get("Proxy-Authorization"), "the proxy's credentials reached the target")
}

func TestProxyHTTPSConnect(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	cert := probetest.NewCertificate(t, "healthy.test", time.Now().Add(-time.Hour), time.Now().Add(10*24*time.Hour))
	srv := startTLSServer(t, &cert, 0)
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{DNSServer: dns.Addr()})
	prober := newKindProber(t, dns, probing.ProberOptions{})

	target := proxyTarget(byName(t, srv)+"/", &probing.Proxy{URL: proxy.URL()})
	target.TLS.RootCAs = cert.PEM
	target.CertExpiryWarning = 30 * 24 * time.Hour
	res := probe(t.Context(), prober, target)
	require.True(t, res.Success, "%+v", res)
	require.NotNil(t, res.CertificateExpiry)
	assert.True(t, cert.X509.NotAfter.Equal(*res.CertificateExpiry))
	assert.Contains(t, res.CertificateWarning, `the server's certificate expires at`)
	assert.Contains(t, res.Phases.Happened(), probing.PhaseTLS, "the handshake over the tunnel is traced")
	assert.Equal(t, []string{strings.TrimPrefix(byName(t, srv), "https://")}, proxy.ConnectTargets(), "the name, resolved by the proxy")
	assert.Empty(t, proxy.ForwardedURLs())

	// The target's certificate is verified through the tunnel.
	target.TLS.RootCAs = nil
	res = probe(t.Context(), prober, target)
	assert.Equal(t, probing.ReasonTLSError, res.Reason, "%+v", res)
}

func TestProxyFailures(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	servers := startProxyServers(t, "127.0.0.1")
	locked := probetest.NewTestProxy(t, probetest.ProxyOptions{Username: "user", Password: proxyPassword})
	refusing := probetest.NewTestProxy(t, probetest.ProxyOptions{RefuseConnect: true})
	down := "http://" + closedPort(t)
	prober := newKindProber(t, dns, probing.ProberOptions{})
	plainURL, tlsURL := servers.plain.URL+"/", servers.tls.URL+"/"

	tests := map[string]struct {
		url         string
		proxy       probing.Proxy
		wantSuccess bool
		wantReason  probing.Reason
		wantCode    int
		wantMessage string
	}{
		"http, credentials given":  {url: plainURL, proxy: probing.Proxy{URL: locked.URL(), Username: "user", Password: proxyPassword}, wantSuccess: true, wantCode: 200},
		"https, credentials given": {url: tlsURL, proxy: probing.Proxy{URL: locked.URL(), Username: "user", Password: proxyPassword}, wantSuccess: true, wantCode: 200},
		"http, credentials missing": {
			url: plainURL, proxy: probing.Proxy{URL: locked.URL()}, wantReason: probing.ReasonProxyFailed, wantCode: 407,
			wantMessage: fmt.Sprintf(`Get %q: proxy %q refused the request: 407 Proxy Authentication Required`, plainURL, locked.URL()),
		},
		"https, credentials missing": {
			url: tlsURL, proxy: probing.Proxy{URL: locked.URL()}, wantReason: probing.ReasonProxyFailed,
			wantMessage: fmt.Sprintf(`Get %q: proxy %q refused CONNECT to %q: 407 Proxy Authentication Required`, tlsURL, locked.URL(), hostPort(servers.tls)),
		},
		"http, wrong password": {
			url: plainURL, proxy: probing.Proxy{URL: locked.URL(), Username: "user", Password: "wrong-pw"}, wantReason: probing.ReasonProxyFailed, wantCode: 407,
		},
		"https, wrong password": {
			url: tlsURL, proxy: probing.Proxy{URL: locked.URL(), Username: "user", Password: "wrong-pw"}, wantReason: probing.ReasonProxyFailed,
		},
		"https, CONNECT refused": {
			url: tlsURL, proxy: probing.Proxy{URL: refusing.URL()}, wantReason: probing.ReasonProxyFailed,
			wantMessage: fmt.Sprintf(`Get %q: proxy %q refused CONNECT to %q: 403 Forbidden`, tlsURL, refusing.URL(), hostPort(servers.tls)),
		},
		"http, proxy down": {
			url: plainURL, proxy: probing.Proxy{URL: down}, wantReason: probing.ReasonProxyFailed,
			wantMessage: fmt.Sprintf(`Get %q: proxy %q unreachable: dial tcp %s: connect: connection refused`, plainURL, down, strings.TrimPrefix(down, "http://")),
		},
		"proxy name unknown": {
			url: plainURL, proxy: probing.Proxy{URL: "http://nosuch.test:3128"}, wantReason: probing.ReasonProxyFailed,
			wantMessage: fmt.Sprintf(`Get %q: proxy "http://nosuch.test:3128" unreachable: dial tcp: lookup nosuch.test on %s: no such host`, plainURL, dns.Addr()),
		},
		"https, proxy down": {
			url: tlsURL, proxy: probing.Proxy{URL: down}, wantReason: probing.ReasonProxyFailed,
			wantMessage: fmt.Sprintf(`Get %q: proxy %q unreachable: dial tcp %s: connect: connection refused`, tlsURL, down, strings.TrimPrefix(down, "http://")),
		},
	}
	t.Run("probe", func(t *testing.T) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				proxy := tc.proxy
				res := probe(t.Context(), prober, servers.target(tc.url, &proxy))
				assert.Equal(t, tc.wantSuccess, res.Success, "%+v", res)
				if tc.wantSuccess {
					assert.Equal(t, probing.ReadyMessage, res.Message)
					return
				}
				assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
				assert.Equal(t, tc.wantCode, res.StatusCode)
				if tc.wantMessage != "" {
					assert.Equal(t, tc.wantMessage, res.Message)
				}
				assert.NotContains(t, res.Message, proxyPassword)
				assert.NotContains(t, res.Message, "wrong-pw")
				again := probe(t.Context(), prober, servers.target(tc.url, &proxy))
				assert.True(t, res.SameOutcome(again), "stable message:\n%s\n%s", res.Message, again.Message)
			})
		}
	})
	assert.EqualValues(t, 2, servers.hits.Load(), "only the probes with credentials reached the servers")
	assert.Equal(t, []string{hostPort(servers.tls), hostPort(servers.tls)}, refusing.ConnectTargets())
}

func TestProxyEgressPolicy(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prefixes, err := egress.ParseCIDRs([]string{deniedAddr + "/32"})
	require.NoError(t, err)
	prober := newKindProber(t, dns, probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{Deny: prefixes, Allow: loopbackOne})})
	allowedServers := startProxyServers(t, "127.0.0.1")
	deniedServers := startProxyServers(t, deniedAddr)
	allowedProxy := probetest.NewTestProxy(t, probetest.ProxyOptions{})
	deniedProxy := probetest.NewTestProxy(t, probetest.ProxyOptions{IP: deniedAddr})

	t.Run("proxy denied, target allowed", func(t *testing.T) {
		for _, url := range []string{allowedServers.plain.URL + "/", allowedServers.tls.URL + "/"} {
			target := allowedServers.target(url, &probing.Proxy{URL: deniedProxy.URL()})
			res := probe(t.Context(), prober, target)
			assert.Equal(t, probing.ReasonEgressDenied, res.Reason, "%+v", res)
			assert.Equal(t, fmt.Sprintf("Get %q: proxy %q unreachable: dial tcp %s: egress to %s denied: denied range %s/32 (--deny-cidrs)",
				url, deniedProxy.URL(), deniedProxy.Addr(), deniedAddr, deniedAddr), res.Message)
			// Directly, the target is allowed.
			target.Proxy = nil
			res = probe(t.Context(), prober, target)
			assert.True(t, res.Success, "%s directly: %+v", url, res)
		}
		assert.Zero(t, deniedProxy.Requests(), "the denied proxy was reached")
	})

	// The policy judges what the prober connects to: through an allowed
	// proxy, a target the policy denies is reached (by the proxy).
	t.Run("target denied, proxy allowed", func(t *testing.T) {
		for _, url := range []string{deniedServers.plain.URL + "/", deniedServers.tls.URL + "/"} {
			target := deniedServers.target(url, nil)
			res := probe(t.Context(), prober, target)
			assert.Equal(t, probing.ReasonEgressDenied, res.Reason, "%s directly: %+v", url, res)
			target.Proxy = &probing.Proxy{URL: allowedProxy.URL()}
			res = probe(t.Context(), prober, target)
			assert.True(t, res.Success, "%s through the proxy: %+v", url, res)
		}
		assert.EqualValues(t, 2, deniedServers.hits.Load())
		assert.EqualValues(t, 2, allowedProxy.Requests())
	})
}

func TestProxyTransportsApart(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	servers := startProxyServers(t, "127.0.0.1")
	first := probetest.NewTestProxy(t, probetest.ProxyOptions{})
	second := probetest.NewTestProxy(t, probetest.ProxyOptions{})
	locked := probetest.NewTestProxy(t, probetest.ProxyOptions{Username: "user", Password: proxyPassword})
	prober := newKindProber(t, dns, probing.ProberOptions{})

	for _, url := range []string{servers.plain.URL + "/", servers.tls.URL + "/"} {
		probe := func(proxy *probing.Proxy) probing.Result {
			target := servers.target(url, proxy)
			target.ReuseConnections = true
			return probe(t.Context(), prober, target)
		}
		// Another proxy for the same target: another transport.
		assert.True(t, probe(&probing.Proxy{URL: first.URL()}).Success)
		assert.True(t, probe(&probing.Proxy{URL: second.URL()}).Success)
		// Other credentials for the same proxy: another transport too,
		// never one that sends the first probe's credentials.
		assert.True(t, probe(&probing.Proxy{URL: locked.URL(), Username: "user", Password: proxyPassword}).Success)
		res := probe(&probing.Proxy{URL: locked.URL(), Username: "user", Password: "wrong-pw"})
		assert.Equal(t, probing.ReasonProxyFailed, res.Reason, "%s: %+v", url, res)
		res = probe(&probing.Proxy{URL: locked.URL()})
		assert.Equal(t, probing.ReasonProxyFailed, res.Reason, "%s: %+v", url, res)
	}
	assert.EqualValues(t, 2, first.Requests())
	assert.EqualValues(t, 2, second.Requests())
}

func TestProxyTimeout(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // never answers
	proxy := &probing.Proxy{URL: "http://" + ln.Addr().String()}
	prober := newKindProber(t, dns, probing.ProberOptions{})

	for _, url := range []string{"https://127.0.0.1:8443/", "http://127.0.0.1:8080/"} {
		target := proxyTarget(url, proxy)
		target.Timeout = 300 * time.Millisecond
		start := time.Now()
		res := probe(t.Context(), prober, target)
		assert.Less(t, time.Since(start), target.Timeout+slack)
		assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
		assert.Equal(t, fmt.Sprintf("Get %q: timeout after 300ms", url), res.Message)
	}
}

func TestProxyInvalid(t *testing.T) {
	t.Parallel()
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	for _, proxyURL := range []string{"socks5://127.0.0.1:1080", "http://user:pw@127.0.0.1:3128", "http://127.0.0.1:3128/path", "http://"} {
		res := probe(t.Context(), prober, proxyTarget("http://127.0.0.1:8080/", &probing.Proxy{URL: proxyURL}))
		assert.Equal(t, probing.ReasonInvalidTarget, res.Reason, "%s: %+v", proxyURL, res)
		assert.NotContains(t, res.Message, ":pw@")
	}
}
