package probetest_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/probetest"
)

const proxyTestTimeout = 10 * time.Second

// echoServer echoes every connection until the client closes its writing
// half, then closes.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	probetest.ServeConns(t, ln, proxyTestTimeout, func(c net.Conn) { _, _ = io.Copy(c, c) })
	return ln.Addr().String()
}

// connect opens a tunnel to target through the proxy at proxyAddr, with
// the header lines extra, and returns the connection, its reader and the
// proxy's answer.
func connect(t *testing.T, proxyAddr, target, extra string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(proxyTestTimeout)))
	_, err = io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+extra+"\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	return c, br, resp
}

func TestProxyConnect(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{})

	c, br, resp := connect(t, proxy.Addr(), echo, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err := io.WriteString(c, "hello through the tunnel")
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	got, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Equal(t, "hello through the tunnel", string(got))
	assert.Equal(t, []string{echo}, proxy.ConnectTargets())
	assert.EqualValues(t, 1, proxy.Requests())
	assert.Empty(t, proxy.ForwardedURLs())
}

func TestProxyForward(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Empty(t, r.Header.Get("Proxy-Authorization"), "forwarded to the server")
		_, _ = io.WriteString(w, "path "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{Username: "user", Password: "pw"})
	proxyURL, err := url.Parse(proxy.URL())
	require.NoError(t, err)
	proxyURL.User = url.UserPassword("user", "pw")
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}, Timeout: proxyTestTimeout}

	resp, err := client.Get(srv.URL + "/some/path?q=1")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "path /some/path", string(body))
	assert.Equal(t, []string{srv.URL + "/some/path?q=1"}, proxy.ForwardedURLs(), "absolute form")
	assert.Empty(t, proxy.ConnectTargets())
	assert.EqualValues(t, 1, proxy.Requests())
}

func TestProxyCredentials(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{Username: "user", Password: "pw"})
	tests := map[string]struct {
		header string
		want   int
	}{
		"missing":   {header: "", want: http.StatusProxyAuthRequired},
		"wrong":     {header: "Proxy-Authorization: Basic dXNlcjpvdGhlcg==\r\n", want: http.StatusProxyAuthRequired}, // user:other
		"not basic": {header: "Proxy-Authorization: Bearer pw\r\n", want: http.StatusProxyAuthRequired},
		"right":     {header: "Proxy-Authorization: Basic dXNlcjpwdw==\r\n", want: http.StatusOK}, // user:pw
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, _, resp := connect(t, proxy.Addr(), echo, tc.header)
			assert.Equal(t, tc.want, resp.StatusCode)
			if tc.want == http.StatusProxyAuthRequired {
				assert.Equal(t, `Basic realm="probetest"`, resp.Header.Get("Proxy-Authenticate"))
			}
		})
	}
}

func TestProxyRefusals(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	dns := probetest.NewTestDNSServer(t, map[string][]net.IP{"echo.test": {net.IPv4(127, 0, 0, 1)}})
	_, echoPort, err := net.SplitHostPort(echo)
	require.NoError(t, err)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	tests := map[string]struct {
		opts   probetest.ProxyOptions
		target string
		want   int
	}{
		"CONNECT refused":        {opts: probetest.ProxyOptions{RefuseConnect: true}, target: echo, want: http.StatusForbidden},
		"nothing listening":      {target: closedAddr, want: http.StatusBadGateway},
		"not a loopback address": {target: "192.0.2.1:80", want: http.StatusBadGateway}, // refused before connecting
		"name without DNS":       {target: "echo.test:" + echoPort, want: http.StatusBadGateway},
		"unknown name":           {opts: probetest.ProxyOptions{DNSServer: dns.Addr()}, target: "other.test:" + echoPort, want: http.StatusBadGateway},
		"name with DNS":          {opts: probetest.ProxyOptions{DNSServer: dns.Addr()}, target: "echo.test:" + echoPort, want: http.StatusOK},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			proxy := probetest.NewTestProxy(t, tc.opts)
			_, _, resp := connect(t, proxy.Addr(), tc.target, "")
			assert.Equal(t, tc.want, resp.StatusCode)
			assert.Equal(t, []string{tc.target}, proxy.ConnectTargets())
		})
	}
}

func TestProxyTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	cert := probetest.NewCertificate(t, "proxy.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{Certificate: &cert.TLS})
	require.True(t, strings.HasPrefix(proxy.URL(), "https://"), proxy.URL())
	proxyURL, err := url.Parse(proxy.URL())
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(cert.X509)
	client := &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(proxyURL),
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		DisableKeepAlives: true,
	}, Timeout: proxyTestTimeout}

	resp, err := client.Get(srv.URL + "/")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{srv.URL + "/"}, proxy.ForwardedURLs())
}

func TestProxyCloseEndsTunnels(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	proxy, err := probetest.NewProxy(probetest.ProxyOptions{})
	require.NoError(t, err)
	c, br, resp := connect(t, proxy.Addr(), echo, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, proxy.Close())
	_, err = br.ReadByte()
	assert.Error(t, err, "the tunnel outlived the proxy")
	assert.NoError(t, proxy.Close(), "a second Close")
	_, err = net.DialTimeout("tcp", proxy.Addr(), proxyTestTimeout)
	assert.Error(t, err, "the proxy still listens")
	_ = c.Close()
}
