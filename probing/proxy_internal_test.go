package probing

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

// Tests of dialTarget through a proxy, which the tcp, tls and grpc probers
// use. Everything listens on and dials 127.0.0.0/8 only.

const internalTimeout = 10 * time.Second

// serveLoopback accepts connections on ip until the test ends and hands
// each to handle (with a deadline), closing it afterwards. The test waits
// for every handler.
func serveLoopback(t *testing.T, ip string, handle func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	probetest.ServeConns(t, ln, internalTimeout, handle)
	return ln.Addr().String()
}

// echo echoes c until the client closes its writing half.
func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// roundTrip writes msg on c, closes c's writing half and returns all that
// comes back.
func roundTrip(t *testing.T, c net.Conn, msg string) string {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(internalTimeout)))
	_, err := io.WriteString(c, msg)
	require.NoError(t, err)
	require.NoError(t, c.(interface{ CloseWrite() error }).CloseWrite())
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	return string(got)
}

// testEgress denies 127.0.0.2 (and the default ranges, but for 127.0.0.1).
func testEgress(t *testing.T) *egress.Policy {
	t.Helper()
	prefixes, err := egress.ParseCIDRs([]string{"127.0.0.2/32"})
	require.NoError(t, err)
	return egress.NewPolicy(egress.Options{Deny: prefixes, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
}

func TestDialTargetThroughProxy(t *testing.T) {
	t.Parallel()
	target := serveLoopback(t, "127.0.0.1", echo)
	open := probetest.NewTestProxy(t, probetest.ProxyOptions{})
	locked := probetest.NewTestProxy(t, probetest.ProxyOptions{Username: "user", Password: "s3cret-pw"})
	refusing := probetest.NewTestProxy(t, probetest.ProxyOptions{RefuseConnect: true})
	down := "http://" + probetest.RefusedAddr(t)
	unreachableTarget := probetest.RefusedAddr(t)

	tests := map[string]struct {
		proxy      *Proxy
		target     string
		wantStatus int    // of a refused CONNECT
		wantErr    string // exact, when set
	}{
		"no proxy":          {target: target},
		"open proxy":        {proxy: &Proxy{URL: open.URL()}, target: target},
		"credentials given": {proxy: &Proxy{URL: locked.URL(), Username: "user", Password: "s3cret-pw"}, target: target},
		"credentials missing": {
			proxy: &Proxy{URL: locked.URL()}, target: target, wantStatus: http.StatusProxyAuthRequired,
			wantErr: fmt.Sprintf("proxy %q refused CONNECT to %q: 407 Proxy Authentication Required", locked.URL(), target),
		},
		"wrong password": {
			proxy: &Proxy{URL: locked.URL(), Username: "user", Password: "other"}, target: target, wantStatus: http.StatusProxyAuthRequired,
		},
		"CONNECT refused": {
			proxy: &Proxy{URL: refusing.URL()}, target: target, wantStatus: http.StatusForbidden,
			wantErr: fmt.Sprintf("proxy %q refused CONNECT to %q: 403 Forbidden", refusing.URL(), target),
		},
		"target unreachable from the proxy": {
			proxy: &Proxy{URL: open.URL()}, target: unreachableTarget, wantStatus: http.StatusBadGateway,
		},
		"proxy down": {
			proxy:   &Proxy{URL: down},
			target:  target,
			wantErr: fmt.Sprintf("proxy %q unreachable: dial tcp %s: connect: connection refused", down, strings.TrimPrefix(down, "http://")),
		},
	}
	d := newDialer(ProberOptions{})
	t.Run("dial", func(t *testing.T) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				conn, err := dialTarget(t.Context(), d, &builtTarget{TargetSpec: TargetSpec{Proxy: tc.proxy}}, tc.target, nil)
				if tc.wantStatus == 0 && tc.wantErr == "" {
					require.NoError(t, err)
					t.Cleanup(func() { _ = conn.Close() })
					assert.Equal(t, "ping", roundTrip(t, conn, "ping"))
					return
				}
				require.Error(t, err)
				assert.Nil(t, conn)
				var pe *proxyError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tc.wantStatus, pe.status)
				assert.Equal(t, ReasonProxyFailed, classify(err))
				if tc.wantErr != "" {
					assert.Equal(t, tc.wantErr, err.Error())
				}
				assert.NotContains(t, err.Error(), "s3cret-pw")
				assert.NotContains(t, err.Error(), "other")
				// The message names the proxy and the target as given, even
				// after errorText with the target's address.
				assert.Equal(t, err.Error(), errorText(err, textScope{addr: "db.test:5432"}))
			})
		}
	})
	assert.ElementsMatch(t, []string{target, unreachableTarget}, open.ConnectTargets())
	assert.Equal(t, []string{target, target, target}, locked.ConnectTargets())
	assert.Equal(t, []string{target}, refusing.ConnectTargets())
}

func TestDialTargetProxyEgress(t *testing.T) {
	t.Parallel()
	d := newDialer(ProberOptions{Egress: testEgress(t)})
	allowedTarget := serveLoopback(t, "127.0.0.1", echo)
	deniedTarget := serveLoopback(t, "127.0.0.2", echo)
	deniedProxy := probetest.NewTestProxy(t, probetest.ProxyOptions{IP: "127.0.0.2"})
	allowedProxy := probetest.NewTestProxy(t, probetest.ProxyOptions{})

	// The policy judges the proxy's address: a denied proxy is not
	// reached, whatever the target.
	_, err := dialTarget(t.Context(), d, &builtTarget{TargetSpec: TargetSpec{Proxy: &Proxy{URL: deniedProxy.URL()}}}, allowedTarget, nil)
	require.Error(t, err)
	assert.Equal(t, ReasonEgressDenied, classify(err))
	assert.Equal(t, fmt.Sprintf("proxy %q unreachable: dial tcp %s: egress to 127.0.0.2 denied: denied range 127.0.0.2/32 (--deny-cidrs)",
		deniedProxy.URL(), deniedProxy.Addr()), err.Error())
	assert.Zero(t, deniedProxy.Requests())

	// Not the target's: reaching it is the proxy's job.
	_, err = dialTarget(t.Context(), d, &builtTarget{TargetSpec: TargetSpec{}}, deniedTarget, nil)
	require.Equal(t, ReasonEgressDenied, classify(err), "directly: %v", err)
	conn, err := dialTarget(t.Context(), d, &builtTarget{TargetSpec: TargetSpec{Proxy: &Proxy{URL: allowedProxy.URL()}}}, deniedTarget, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	assert.Equal(t, "through the proxy", roundTrip(t, conn, "through the proxy"))
	assert.Equal(t, []string{deniedTarget}, allowedProxy.ConnectTargets())
}

// fakeProxy answers every CONNECT with reply, written at once, then
// handles the tunnel with then (when not nil).
func fakeProxy(t *testing.T, reply []byte, then func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	return "http://" + serveLoopback(t, "127.0.0.1", func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
		if then != nil {
			then(c, br)
		}
	})
}

func TestDialTargetKeepsTunnelBytesAfterHeader(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 100, 4096, 10_000, maxConnectResponseBytes + 1000} {
		for _, header := range []string{
			"HTTP/1.1 200 Connection established\r\n\r\n",
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nVia: 1.1 fake\r\n\r\n",
		} {
			t.Run(fmt.Sprintf("%d bytes after %q", size, header), func(t *testing.T) {
				t.Parallel()
				banner := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
				proxy := fakeProxy(t, append([]byte(header), banner...), func(c net.Conn, br *bufio.Reader) {
					got, _ := io.ReadAll(br)
					_, _ = c.Write(append([]byte("echo: "), got...))
				})
				conn, err := dialTarget(t.Context(), newDialer(ProberOptions{}), &builtTarget{TargetSpec: TargetSpec{Proxy: &Proxy{URL: proxy}}}, "db.test:5432", nil)
				require.NoError(t, err)
				t.Cleanup(func() { _ = conn.Close() })
				got := roundTrip(t, conn, "ping")
				assert.Equal(t, string(banner)+"echo: ping", got, "every byte, in order")
			})
		}
	}
}

func TestDialTargetProxyFailures(t *testing.T) {
	t.Parallel()
	hugeHeader := "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxConnectResponseBytes) + "\r\n\r\n"
	tests := map[string]struct {
		reply   string
		wantErr string
	}{
		"closed before answering": {reply: "", wantErr: "the proxy closed the connection"},
		"closed in the header":    {reply: "HTTP/1.1 200 OK\r\nVia:", wantErr: "the proxy closed the connection"},
		"not HTTP":                {reply: "SSH-2.0-OpenSSH_9.6\r\n", wantErr: "malformed HTTP status line"},
		"header too large":        {reply: hugeHeader, wantErr: "CONNECT response header larger than 65536 bytes"},
		"redirect":                {reply: "HTTP/1.1 302 Found\r\nLocation: http://evil.test/\r\n\r\n", wantErr: "refused CONNECT to \"db.test:5432\": 302 Found"},
		"unknown status":          {reply: "HTTP/1.1 599 Whatever\r\n\r\n", wantErr: "refused CONNECT to \"db.test:5432\": 599"},
		"status 000":              {reply: "HTTP/1.1 000 Zero\r\n\r\n", wantErr: "failed CONNECT to \"db.test:5432\": read CONNECT response: invalid status code 000"},
		"switching protocols":     {reply: "HTTP/1.1 101 Switching Protocols\r\n\r\n", wantErr: "refused CONNECT to \"db.test:5432\": 101 Switching Protocols"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			proxy := fakeProxy(t, []byte(tc.reply), nil)
			_, err := dialTarget(t.Context(), newDialer(ProberOptions{}), &builtTarget{TargetSpec: TargetSpec{Proxy: &Proxy{URL: proxy}}}, "db.test:5432", nil)
			require.Error(t, err)
			assert.Equal(t, ReasonProxyFailed, classify(err))
			assert.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("proxy %q ", proxy)), err.Error())
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestDialTargetProxyTimeout(t *testing.T) {
	t.Parallel()
	silent := serveLoopback(t, "127.0.0.1", func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	proxy := &Proxy{URL: "http://" + silent}
	d := newDialer(ProberOptions{})

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := dialTarget(ctx, d, &builtTarget{TargetSpec: TargetSpec{Proxy: proxy}}, "db.test:5432", nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 200*time.Millisecond+2*time.Second)

	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	_, err = dialTarget(ctx, d, &builtTarget{TargetSpec: TargetSpec{Proxy: proxy}}, "db.test:5432", nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 100*time.Millisecond+2*time.Second)
}

func TestDialTargetHTTPSProxy(t *testing.T) {
	t.Parallel()
	target := serveLoopback(t, "127.0.0.1", echo)
	cert := probetest.NewCertificate(t, "proxy.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{Certificate: &cert.TLS, Username: "u", Password: "p"})
	p := Proxy{URL: proxy.URL(), Username: "u", Password: "p"}
	d := newDialer(ProberOptions{})
	roots := x509.NewCertPool()
	roots.AddCert(cert.X509)

	conn, err := dialThroughProxy(t.Context(), d, IPFamilyAny, p, &tls.Config{RootCAs: roots}, target)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	assert.Equal(t, "over TLS", roundTrip(t, conn, "over TLS"))

	// A proxy certificate that does not verify fails the proxy, not the
	// target's TLS.
	_, err = dialTarget(t.Context(), d, &builtTarget{TargetSpec: TargetSpec{Proxy: &p}}, target, nil)
	require.Error(t, err)
	assert.Equal(t, ReasonProxyFailed, classify(err))
	assert.Contains(t, err.Error(), fmt.Sprintf("proxy %q unreachable: tls: failed to verify certificate", proxy.URL()))
}

func TestProxyTransportKey(t *testing.T) {
	t.Parallel()
	base := TargetSpec{URL: "https://example.test/", Proxy: &Proxy{URL: "http://proxy.test:3128", Username: "user", Password: "s3cret-pw"}}
	with := func(p *Proxy) *TargetSpec { c := base; c.Proxy = p; return &c }
	assert.Equal(t, keyOf(&base), keyOf(with(&Proxy{URL: "http://proxy.test:3128", Username: "user", Password: "s3cret-pw"})))
	others := []*TargetSpec{
		with(nil),
		with(&Proxy{URL: "http://proxy.test:3128"}),
		with(&Proxy{URL: "http://proxy.test:3128", Username: "user", Password: "other"}),
		with(&Proxy{URL: "http://proxy.test:3128", Username: "use", Password: "rs3cret-pw"}),
		with(&Proxy{URL: "http://other.test:3128", Username: "user", Password: "s3cret-pw"}),
	}
	keys := []transportKey{keyOf(&base)}
	for _, o := range others {
		k := keyOf(o)
		assert.NotContains(t, keys, k, "%+v", o.Proxy)
		keys = append(keys, k)
	}
	assert.NotContains(t, fmt.Sprintf("%+v %#v", keyOf(&base), keyOf(&base)), "s3cret")
	assert.Equal(t, transportKey{}, keyOf(&TargetSpec{}), "no proxy, the default transport")
}

// FuzzReadConnectResponse checks that readConnectResponse never panics,
// never reads more than its bound before the tunnel, and that what it
// returns after the header is exactly what followed it.
func FuzzReadConnectResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 Connection established\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\nSSH-2.0-banner\r\n",
		"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\nx",
		"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n",
		"HTTP/1.1 403\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n continued\r\n\r\n",
		"HTTP/1.1 200 OK\n\nlf only",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 -1 OK\r\n\r\n",
		"HTTP/9.9 200 OK\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\n",
		"HTTP/0.0 000\n\n",
		"",
		"\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &countingReader{r: bytes.NewReader(data)}
		status, rest, err := readConnectResponse(r)
		if r.n > maxConnectResponseBytes {
			t.Fatalf("read %d bytes, more than %d", r.n, maxConnectResponseBytes)
		}
		if err != nil {
			if status != 0 || rest != nil {
				t.Fatalf("status %d and %d bytes with error %v", status, len(rest), err)
			}
			return
		}
		if status < 100 || status > 999 || (status < 200 && status != http.StatusSwitchingProtocols) {
			t.Fatalf("status %d", status)
		}
		if !bytes.HasSuffix(data[:r.n], rest) {
			t.Fatalf("rest %q is not what followed the header in %q", rest, data[:r.n])
		}
		header := data[:r.n-len(rest)]
		if !bytes.HasSuffix(header, []byte("\n\n")) && !bytes.HasSuffix(header, []byte("\n\r\n")) {
			t.Fatalf("the header %q does not end with an empty line", header)
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}
