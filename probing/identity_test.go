package probing_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// What a probe saw of its target's identity: the addresses its name
// resolved to, the certificate, the final URL. Every server listens on
// loopback, and every name is resolved by a loopback stub.

// identityDNS starts a stub that resolves one.test to 127.0.0.1 and
// multi.test to 127.0.0.9 (where nothing listens: refused at once) and
// 127.0.0.1.
func identityDNS(t *testing.T) *probetest.DNSServer {
	t.Helper()
	return probetest.NewTestDNSServer(t, map[string][]net.IP{
		"one.test":   {net.IPv4(127, 0, 0, 1)},
		"multi.test": {net.IPv4(127, 0, 0, 9), net.IPv4(127, 0, 0, 1)},
	})
}

func portIn(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}

// TestResolvedAddressesOfEveryKind: every kind reports the addresses its
// name resolved to, from its own dial (no query of its own), sorted; an IP
// literal reports itself; a proxied target reports nothing (the proxy
// resolves it, and the proxy's own name is not the target's); none of
// them shows in the message.
func TestResolvedAddressesOfEveryKind(t *testing.T) {
	t.Parallel()
	dns := identityDNS(t)
	prober := newKindProber(t, dns, probing.ProberOptions{})

	web := startServer(t, probeServer(t).Config.Handler)
	secure := startTLSServer(t, nil, 0)
	banner := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	plainGRPC := startGRPC(t, grpcServerOptions{})
	now := time.Now()
	cert := probetest.NewCertificate(t, "one.test", now.Add(-time.Hour), now.Add(24*time.Hour))
	secureGRPC := startGRPC(t, grpcServerOptions{cert: &cert})
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{DNSServer: dns.Addr()})
	dnsPort := portIn(t, dns.Addr())
	skip := probing.TLSOptions{InsecureSkipVerify: true}

	one := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	cases := map[string]struct {
		spec probing.TargetSpec
		want []netip.Addr
	}{
		"http":             {spec: probing.TargetSpec{URL: "http://one.test:" + portIn(t, web.Listener.Addr().String()) + "/ok", Method: http.MethodGet}, want: one},
		"http, two names":  {spec: probing.TargetSpec{URL: "http://multi.test:" + portIn(t, web.Listener.Addr().String()) + "/ok", Method: http.MethodGet}, want: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.9")}},
		"http, IP literal": {spec: probing.TargetSpec{URL: web.URL + "/ok", Method: http.MethodGet}, want: one},
		"https":            {spec: probing.TargetSpec{URL: "https://one.test:" + portIn(t, secure.Listener.Addr().String()), Method: http.MethodGet, TLS: skip}, want: one},
		"tcp":              {spec: probing.TargetSpec{URL: "tcp://one.test:" + portIn(t, banner.Addr())}, want: one},
		"tls":              {spec: probing.TargetSpec{URL: "tls://one.test:" + portIn(t, secure.Listener.Addr().String()), TLS: skip}, want: one},
		"grpc":             {spec: probing.TargetSpec{URL: "grpc://one.test:" + plainGRPC.port}, want: one},
		"grpcs":            {spec: probing.TargetSpec{URL: "grpcs://one.test:" + secureGRPC.port, TLS: skip}, want: one},
		"dns over udp":     {spec: probing.TargetSpec{URL: "dns://one.test:" + dnsPort, DNS: &probing.DNSOptions{Name: "one.test", Type: "A", Transport: "udp"}}, want: one},
		"dns over tcp":     {spec: probing.TargetSpec{URL: "dns://one.test:" + dnsPort, DNS: &probing.DNSOptions{Name: "one.test", Type: "A", Transport: "tcp"}}, want: one},
		"http by a proxy":  {spec: probing.TargetSpec{URL: "http://one.test:" + portIn(t, web.Listener.Addr().String()) + "/ok", Method: http.MethodGet, Proxy: &probing.Proxy{URL: "http://multi.test:" + portIn(t, strings.TrimPrefix(proxy.URL(), "http://"))}}},
		"tcp by a proxy":   {spec: probing.TargetSpec{URL: "tcp://one.test:" + portIn(t, banner.Addr()), Proxy: &probing.Proxy{URL: "http://multi.test:" + portIn(t, strings.TrimPrefix(proxy.URL(), "http://"))}}},
		"unknown name":     {spec: probing.TargetSpec{URL: "tcp://unknown.test:" + portIn(t, banner.Addr())}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.spec.Timeout = relaxedTimeout
			res := probe(context.Background(), prober, tc.spec)
			if tc.want != nil {
				require.True(t, res.Success, "%s: %s", res.Reason, res.Message)
			}
			assert.Equal(t, tc.want, res.ResolvedAddresses)
			assert.NotContains(t, res.Message, "127.0.0.9", "no resolved address in the message")
		})
	}
}

// TestResolvedAddressesNotOnAKeptConnection: a probe over a kept-alive
// connection resolved nothing, and says so with nil, not with an empty
// set that would read as a change.
func TestResolvedAddressesNotOnAKeptConnection(t *testing.T) {
	t.Parallel()
	dns := identityDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	web := startServer(t, probeServer(t).Config.Handler)
	target := mustTarget(t, probing.TargetSpec{
		URL: "http://one.test:" + portIn(t, web.Listener.Addr().String()) + "/ok", Method: http.MethodGet,
		Timeout: relaxedTimeout, ReuseConnections: true,
	})

	first := prober.Probe(context.Background(), target)
	require.True(t, first.Success, first.Message)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, first.ResolvedAddresses)
	second := prober.Probe(context.Background(), target)
	require.True(t, second.Success, second.Message)
	assert.Nil(t, second.ResolvedAddresses, "no lookup on a kept connection")
}

// TestCertificateFingerprintAfterARotation: the server's certificate
// changes while the same target is probed: the fingerprint follows it,
// the outcome (SameOutcome) does not.
func TestCertificateFingerprintAfterARotation(t *testing.T) {
	t.Parallel()
	now := time.Now()
	first := probetest.NewCertificate(t, "one.test", now.Add(-time.Hour), now.Add(30*24*time.Hour))
	second := probetest.NewCertificate(t, "one.test", now.Add(-time.Hour), now.Add(30*24*time.Hour))
	var serving atomic.Pointer[tls.Certificate]
	serving.Store(&first.TLS)
	// httptest's StartTLS would serve its own certificate to a client
	// that sends no server name: the TLS listener is this test's.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Listener = tls.NewListener(srv.Listener, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return serving.Load(), nil },
	})
	srv.Start()
	t.Cleanup(srv.Close)
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	url := "https://" + srv.Listener.Addr().String()
	target := mustTarget(t, probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout, TLS: probing.TLSOptions{InsecureSkipVerify: true}})

	before := prober.Probe(context.Background(), target)
	serving.Store(&second.TLS)
	after := prober.Probe(context.Background(), target)

	require.NotNil(t, before.Certificate)
	require.NotNil(t, after.Certificate)
	assert.Equal(t, fingerprint(first), before.Certificate.FingerprintSHA256)
	assert.Equal(t, fingerprint(second), after.Certificate.FingerprintSHA256)
	assert.NotEqual(t, before.Certificate.FingerprintSHA256, after.Certificate.FingerprintSHA256)
	assert.True(t, before.SameOutcome(after), "a rotation with the same expiry is the same outcome")
}

func fingerprint(c probetest.Certificate) string {
	sum := sha256.Sum256(c.X509.Raw)
	return hex.EncodeToString(sum[:])
}

// TestFinalURLAfterARedirect: the final URL is the last hop's when
// redirects are followed, the target's own when not (or without a
// redirect), without user information, and none without a response; it
// never shows in the message.
func TestFinalURLAfterARedirect(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/from", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/to?marker=1", http.StatusFound)
	})
	mux.HandleFunc("/to", func(http.ResponseWriter, *http.Request) {})
	srv := startServer(t, mux)
	prober := newProber(t, newDNS(t), probing.ProberOptions{})

	cases := map[string]struct {
		spec probing.TargetSpec
		want string
	}{
		"followed":     {spec: probing.TargetSpec{URL: srv.URL + "/from", FollowRedirects: true}, want: srv.URL + "/to?marker=1"},
		"not followed": {spec: probing.TargetSpec{URL: srv.URL + "/from", ExpectedStatusCodes: []int{http.StatusFound}}, want: srv.URL + "/from"},
		"no redirect":  {spec: probing.TargetSpec{URL: srv.URL + "/to"}, want: srv.URL + "/to"},
		"credentials":  {spec: probing.TargetSpec{URL: strings.Replace(srv.URL, "http://", "http://user:secret@", 1) + "/to"}, want: srv.URL + "/to"},
		"no response":  {spec: probing.TargetSpec{URL: "http://" + closedPort(t) + "/to"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.spec.Method, tc.spec.Timeout = http.MethodGet, relaxedTimeout
			res := probe(context.Background(), prober, tc.spec)
			assert.Equal(t, tc.want, res.FinalURL)
			assert.NotContains(t, res.Message, "marker")
		})
	}
}
