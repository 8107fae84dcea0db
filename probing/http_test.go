package probing_test

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// Timing margins are generous on purpose: the tests share two cores with
// other heavy work (race detector, compilers, an API server).
const (
	// slack is how much later than its timeout a probe may return.
	slack = 2 * time.Second
	// relaxedTimeout is the timeout of probes that are not about timing.
	relaxedTimeout = 10 * time.Second
)

// newDNS starts a loopback DNS server knowing healthy.test.
func newDNS(t testing.TB) *probetest.DNSServer {
	t.Helper()
	return probetest.NewTestDNSServer(t, map[string][]net.IP{
		"healthy.test": {net.IPv4(127, 0, 0, 1)},
	})
}

// newProber returns a prober whose resolver asks dns: tests never use the
// system resolver.
func newProber(t testing.TB, dns *probetest.DNSServer, opts probing.HTTPProberOptions) *probing.HTTPProber {
	t.Helper()
	opts.DNSServer = dns.Addr()
	p := probing.NewHTTPProber(opts)
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// startServer starts an httptest server, closed when the test ends.
func startServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// byName returns srv's URL with healthy.test instead of 127.0.0.1.
func byName(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return u.Scheme + "://healthy.test:" + u.Port()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// untilDone waits for the request to be cancelled (or for max, as a safety
// net), so that slow handlers never outlive the probe.
func untilDone(r *http.Request, max time.Duration) {
	select {
	case <-r.Context().Done():
	case <-time.After(max):
	}
}

func TestHTTPProberProbe(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{})

	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/error", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/head", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
	mux.HandleFunc("/user-agent", func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != "webchecker" {
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	mux.HandleFunc("/truncated", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "only ten.\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // hang up in the middle of the body
	})
	srv := startServer(t, mux)
	refused := "http://" + closedPort(t) + "/"

	tests := map[string]struct {
		url      string // absolute
		method   string
		expected []int
		follow   bool

		wantSuccess bool
		wantReason  probing.Reason
		wantCode    int
		wantMessage string // exact, when set
	}{
		"2xx by IP": {
			url:         srv.URL + "/ok",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
			wantMessage: probing.ReadyMessage,
		},
		"2xx by name": {
			url:         byName(t, srv) + "/ok",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
			wantMessage: probing.ReadyMessage,
		},
		"500 is unexpected": {
			url:        srv.URL + "/error",
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 500,
			wantMessage: "unexpected status code 500 (expected 2xx or 3xx)",
		},
		"204 when 200 is expected": {
			url: srv.URL + "/nocontent", expected: []int{200},
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 204,
			wantMessage: "unexpected status code 204 (expected one of 200)",
		},
		"204 when 200 or 201 is expected": {
			url: byName(t, srv) + "/nocontent", expected: []int{200, 201},
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 204,
			wantMessage: "unexpected status code 204 (expected one of 200, 201)",
		},
		"204 when 204 is expected": {
			url: srv.URL + "/nocontent", expected: []int{204},
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 204,
			wantMessage: probing.ReadyMessage,
		},
		"redirect followed": {
			url: srv.URL + "/redirect", follow: true,
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
		},
		"redirect followed, 200 expected": {
			url: byName(t, srv) + "/redirect", follow: true, expected: []int{200},
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
		},
		"redirect not followed, default codes": {
			url:         srv.URL + "/redirect",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 302,
		},
		"redirect not followed, 200 expected": {
			url: srv.URL + "/redirect", expected: []int{200},
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 302,
			wantMessage: "unexpected status code 302 (expected one of 200)",
		},
		"redirect loop": {
			url: srv.URL + "/loop", follow: true,
			wantReason: probing.ReasonTooManyRedirects, wantCode: 302,
			wantMessage: `Get "` + srv.URL + `/loop": stopped after 10 redirects`,
		},
		"redirect loop not followed": {
			url:         srv.URL + "/loop",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 302,
		},
		"HEAD": {
			url: srv.URL + "/head", method: http.MethodHead,
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
		},
		"GET where the server wants HEAD": {
			url: srv.URL + "/head", method: http.MethodGet,
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 405,
		},
		"default method is GET": {
			url:        srv.URL + "/head",
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 405,
		},
		"user agent": {
			url:         srv.URL + "/user-agent",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
		},
		"body cut short": {
			url:        srv.URL + "/truncated",
			wantReason: probing.ReasonConnectionFailed, wantCode: 200,
			wantMessage: `Get "` + srv.URL + `/truncated": read response body: unexpected EOF`,
		},
		"connection refused": {
			url:         refused,
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: `Get "` + refused + `": dial tcp ` + strings.TrimSuffix(strings.TrimPrefix(refused, "http://"), "/") + `: connect: connection refused`,
		},
		"unresolvable host": {
			url:         "http://badnews.me/",
			wantReason:  probing.ReasonDNSFailed,
			wantMessage: `Get "http://badnews.me/": dial tcp: lookup badnews.me on ` + dns.Addr() + `: no such host`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			target := probing.Target{
				URL:                 tc.url,
				Method:              tc.method,
				Timeout:             relaxedTimeout,
				ExpectedStatusCodes: tc.expected,
				FollowRedirects:     tc.follow,
			}
			res := prober.Probe(t.Context(), target)
			assert.Equal(t, tc.wantSuccess, res.Success, "Success (%+v)", res)
			assert.Equal(t, tc.wantReason, res.Reason, "Reason (%+v)", res)
			assert.Equal(t, tc.wantCode, res.StatusCode, "StatusCode (%+v)", res)
			if tc.wantMessage != "" {
				assert.Equal(t, tc.wantMessage, res.Message)
			}
			if tc.wantSuccess {
				assert.Equal(t, probing.ReadyMessage, res.Message)
			}
			assert.Positive(t, res.Duration)
		})
	}

	// The host names were resolved by the stub, not by the system resolver.
	t.Cleanup(func() { assert.Positive(t, dns.Queries()) })
}

func TestHTTPProberTimeout(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{})
	srv := startServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		untilDone(r, 30*time.Second) // much longer than the probe's timeout
	}))

	const timeout = 200 * time.Millisecond
	target := probing.Target{URL: srv.URL + "/slow", Method: http.MethodGet, Timeout: timeout}
	start := time.Now()
	res := prober.Probe(t.Context(), target)
	elapsed := time.Since(start)

	assert.False(t, res.Success)
	assert.Equal(t, probing.ReasonTimeout, res.Reason)
	assert.Equal(t, `Get "`+srv.URL+`/slow": timeout after 200ms`, res.Message)
	assert.Zero(t, res.StatusCode)
	assert.GreaterOrEqual(t, res.Duration, timeout)
	assert.Less(t, elapsed, timeout+slack, "the probe must return at its timeout")
}

func TestHTTPProberHugeBody(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{}) // 64 KiB limit

	const bodySize = 1 << 30
	var written atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		defer once.Do(func() { close(done) })
		w.Header().Set("Content-Length", strconv.Itoa(bodySize))
		chunk := make([]byte, 32<<10)
		for written.Load() < bodySize {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return // the prober closed the connection
			}
		}
	}))

	const timeout = 30 * time.Second
	start := time.Now()
	res := prober.Probe(t.Context(), probing.Target{URL: byName(t, srv) + "/huge", Timeout: timeout})
	elapsed := time.Since(start)

	assert.True(t, res.Success, "%+v", res)
	assert.Equal(t, 200, res.StatusCode)
	assert.Less(t, elapsed, timeout/3, "reading the body must stop at the limit")

	// The prober must hang up instead of draining the body: the handler's
	// writes then fail.
	select {
	case <-done:
	case <-time.After(relaxedTimeout):
		t.Fatalf("the server is still sending after %d bytes: the prober did not close the connection", written.Load())
	}
	t.Logf("server wrote %d bytes", written.Load())
	// The server wrote the 64 KiB read, plus what the kernel's socket
	// buffers held (a few MiB on loopback), but nowhere near the body.
	assert.Less(t, written.Load(), int64(probing.DefaultBodyLimit+32<<20))
}

func TestHTTPProberSlowBody(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{})
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flusher := w.(http.Flusher)
		w.WriteHeader(http.StatusOK)
		flusher.Flush()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		stop := time.After(30 * time.Second) // safety net
		for {
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-tick.C:
				if _, err := w.Write([]byte("x")); err != nil {
					return
				}
				flusher.Flush()
			}
		}
	}))

	const timeout = 500 * time.Millisecond
	start := time.Now()
	res := prober.Probe(t.Context(), probing.Target{URL: srv.URL + "/drip", Timeout: timeout})
	elapsed := time.Since(start)

	assert.False(t, res.Success)
	assert.Equal(t, probing.ReasonTimeout, res.Reason)
	assert.Equal(t, `Get "`+srv.URL+`/drip": timeout after 500ms`, res.Message)
	assert.Equal(t, 200, res.StatusCode, "the headers were received")
	assert.GreaterOrEqual(t, elapsed, timeout)
	assert.Less(t, elapsed, timeout+slack, "the body read must be cut at the timeout")
}

func TestHTTPProberTLS(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{})

	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake errors are expected
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	plainSrv := startServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	tests := map[string]struct {
		url         string
		wantContain string
	}{
		"untrusted certificate": {
			url:         tlsSrv.URL + "/",
			wantContain: "x509: certificate signed by unknown authority",
		},
		"untrusted certificate by name": {
			url:         byName(t, tlsSrv) + "/",
			wantContain: "x509: certificate",
		},
		"HTTPS to an HTTP server": {
			url:         "https://" + plainSrv.Listener.Addr().String() + "/",
			wantContain: "server gave HTTP response to HTTPS client",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := prober.Probe(t.Context(), probing.Target{URL: tc.url, Timeout: relaxedTimeout})
			assert.False(t, res.Success)
			assert.Equal(t, probing.ReasonTLSError, res.Reason, "%+v", res)
			assert.Zero(t, res.StatusCode)
			assert.Contains(t, res.Message, tc.wantContain)
			assert.True(t, strings.HasPrefix(res.Message, `Get "`+tc.url+`": `), res.Message)
		})
	}
}

// resetServer accepts connections, reads the request and resets the
// connection without answering.
func resetServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				_ = c.SetDeadline(time.Now().Add(relaxedTimeout))
				_, _ = http.ReadRequest(bufio.NewReader(c))
				_ = c.(*net.TCPConn).SetLinger(0) // close with RST
				_ = c.Close()
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return "http://" + ln.Addr().String() + "/"
}

// An unchanged failure must give the same message every time.
func TestHTTPProberStableMessages(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{})

	slow := startServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		untilDone(r, 30*time.Second)
	}))
	loop := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path, http.StatusFound)
	}))
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)

	tests := map[string]struct {
		target     probing.Target
		wantReason probing.Reason
	}{
		"connection refused": {
			target:     probing.Target{URL: "http://" + closedPort(t) + "/", Timeout: relaxedTimeout},
			wantReason: probing.ReasonConnectionFailed,
		},
		"connection reset": {
			target:     probing.Target{URL: resetServer(t), Timeout: relaxedTimeout},
			wantReason: probing.ReasonConnectionFailed,
		},
		"unresolvable host": {
			target:     probing.Target{URL: "http://badnews.me/", Timeout: relaxedTimeout},
			wantReason: probing.ReasonDNSFailed,
		},
		"timeout": {
			target:     probing.Target{URL: byName(t, slow) + "/", Timeout: 200 * time.Millisecond},
			wantReason: probing.ReasonTimeout,
		},
		"untrusted certificate": {
			target:     probing.Target{URL: tlsSrv.URL + "/", Timeout: relaxedTimeout},
			wantReason: probing.ReasonTLSError,
		},
		"redirect loop": {
			target:     probing.Target{URL: loop.URL + "/a", Timeout: relaxedTimeout, FollowRedirects: true},
			wantReason: probing.ReasonTooManyRedirects,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first := prober.Probe(t.Context(), tc.target)
			second := prober.Probe(t.Context(), tc.target)
			t.Logf("message: %s", first.Message)
			assert.Equal(t, tc.wantReason, first.Reason, "%+v", first)
			assert.Equal(t, first.Message, second.Message)
			assert.True(t, first.SameOutcome(second), "%+v\n%+v", first, second)
			// No ephemeral local port ("127.0.0.1:54321->").
			assert.NotRegexp(t, `:\d+->`, first.Message)
			assert.NotContains(t, first.Message, "Client.Timeout")
		})
	}
}

// Two probes of the same server reuse one keep-alive connection.
func TestHTTPProberKeepAlive(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{})

	var newConns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	for _, method := range []string{http.MethodGet, http.MethodGet, http.MethodHead} {
		res := prober.Probe(t.Context(), probing.Target{URL: byName(t, srv) + "/", Method: method, Timeout: relaxedTimeout})
		require.True(t, res.Success, "%+v", res)
	}
	assert.Equal(t, int64(1), newConns.Load(), "new connections")
}

func TestHTTPProberCancelled(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{})
	srv := startServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := prober.Probe(ctx, probing.Target{URL: srv.URL + "/", Timeout: relaxedTimeout})
	assert.False(t, res.Success)
	assert.Equal(t, probing.ReasonTimeout, res.Reason)
	assert.Equal(t, `Get "`+srv.URL+`/": probe cancelled: context canceled`, res.Message)
}

func TestHTTPProberInvalidTarget(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.HTTPProberOptions{})

	tests := map[string]struct {
		target      probing.Target
		wantContain string
	}{
		"empty URL":          {target: probing.Target{Timeout: time.Second}, wantContain: "empty URL"},
		"unsupported scheme": {target: probing.Target{URL: "ftp://127.0.0.1/", Timeout: time.Second}, wantContain: `unsupported scheme "ftp"`},
		"no scheme":          {target: probing.Target{URL: "127.0.0.1:8080/", Timeout: time.Second}, wantContain: "invalid target URL"},
		"no host":            {target: probing.Target{URL: "http:///path", Timeout: time.Second}, wantContain: "missing host"},
		"unparseable":        {target: probing.Target{URL: "http://[::1", Timeout: time.Second}, wantContain: "invalid target URL"},
		"control character":  {target: probing.Target{URL: "http://127.0.0.1/\x00", Timeout: time.Second}, wantContain: "invalid target URL"},
		"bad port":           {target: probing.Target{URL: "http://127.0.0.1:port/", Timeout: time.Second}, wantContain: "invalid port"},
		"password is not shown": {
			target:      probing.Target{URL: "http://user:secret@127.0.0.1:badport/", Timeout: time.Second},
			wantContain: "invalid port",
		},
		"TRACE":             {target: probing.Target{URL: "http://127.0.0.1/", Method: "TRACE", Timeout: time.Second}, wantContain: `unsupported method "TRACE"`},
		"unknown IP family": {target: probing.Target{URL: "http://127.0.0.1/", Timeout: time.Second, IPFamily: "IPv5"}, wantContain: `unknown IP family "IPv5"`},
		"CA without certificates": {
			target:      probing.Target{URL: "https://127.0.0.1/", Timeout: time.Second, TLS: probing.TLSOptions{RootCAs: []byte("not PEM")}},
			wantContain: "CA bundle holds no PEM-encoded certificate",
		},
		"malformed method":  {target: probing.Target{URL: "http://127.0.0.1/", Method: "GE T", Timeout: time.Second}, wantContain: "unsupported method"},
		"zero timeout":      {target: probing.Target{URL: "http://127.0.0.1/"}, wantContain: "timeout 0s is not positive"},
		"negative timeout":  {target: probing.Target{URL: "http://127.0.0.1/", Timeout: -time.Second}, wantContain: "not positive"},
		"everything broken": {target: probing.Target{URL: "%%", Method: "\x00"}, wantContain: "invalid target"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var res probing.Result
			require.NotPanics(t, func() { res = prober.Probe(t.Context(), tc.target) })
			assert.False(t, res.Success)
			assert.Equal(t, probing.ReasonInvalidTarget, res.Reason)
			assert.Zero(t, res.StatusCode)
			assert.Contains(t, res.Message, tc.wantContain)
			assert.NotContains(t, res.Message, "secret")
		})
	}
	assert.Zero(t, dns.Queries(), "invalid targets are not resolved")
}

func TestBuildURL(t *testing.T) {
	t.Parallel()
	valid := map[string]struct {
		host, path string
		want       string
	}{
		"host and root":            {host: "http://flant.ru", path: "/", want: "http://flant.ru/"},
		"bare host with port":      {host: "example.com:8080", path: "/healthz?full=1", want: "http://example.com:8080/healthz?full=1"},
		"https, empty path":        {host: "https://h", path: "", want: "https://h/"},
		"trailing slash":           {host: "https://example.com:8443/", path: "/status", want: "https://example.com:8443/status"},
		"bare host":                {host: "example.com", path: "/", want: "http://example.com/"},
		"bare IPv6 with port":      {host: "[::1]:8080", path: "/", want: "http://[::1]:8080/"},
		"IPv6 with scheme":         {host: "https://[2001:db8::1]", path: "/x", want: "https://[2001:db8::1]/x"},
		"IPv4":                     {host: "127.0.0.1:80", path: "/a/b", want: "http://127.0.0.1:80/a/b"},
		"upper case scheme":        {host: "HTTPS://example.com", path: "/", want: "https://example.com/"},
		"escaped path":             {host: "example.com", path: "/a%2Fb?q=a%20b", want: "http://example.com/a%2Fb?q=a%20b"},
		"query only":               {host: "example.com", path: "/?x=1&y=2", want: "http://example.com/?x=1&y=2"},
		"path with space escaped":  {host: "example.com", path: "/a b", want: "http://example.com/a%20b"},
		"query with space escaped": {host: "example.com", path: "/? ", want: "http://example.com/?%20"}, // found by FuzzProbePath
		"query escaped as needed":  {host: "example.com", path: "/s?q=a b&x=<\u00e9>&y=%41|", want: "http://example.com/s?q=a%20b&x=%3C%C3%A9%3E&y=%41%7C"},
	}
	for name, tc := range valid {
		t.Run("valid/"+name, func(t *testing.T) {
			t.Parallel()
			got, err := probing.BuildURL(tc.host, tc.path)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	invalid := map[string]struct {
		host, path  string
		wantContain string
	}{
		"empty host":            {host: "", path: "/", wantContain: "empty"},
		"other scheme":          {host: "ftp://example.com", path: "/", wantContain: `unsupported scheme "ftp"`},
		"query in host":         {host: "http://example.com?x=1", path: "/", wantContain: "query"},
		"empty query in host":   {host: "example.com?", path: "/", wantContain: "query"},
		"fragment in host":      {host: "http://example.com#top", path: "/", wantContain: "fragment"},
		"path in host":          {host: "http://example.com/api", path: "/", wantContain: `unexpected path "/api"`},
		"credentials in host":   {host: "http://user:pw@example.com", path: "/", wantContain: "credentials"},
		"scheme only":           {host: "http://", path: "/", wantContain: "missing host"},
		"port only":             {host: ":8080", path: "/", wantContain: "missing host"},
		"bad port":              {host: "example.com:http", path: "/", wantContain: "invalid port"},
		"port out of range":     {host: "example.com:70000", path: "/", wantContain: "invalid port"},
		"empty port":            {host: "example.com:", path: "/", wantContain: "empty port"},
		"unbracketed IPv6":      {host: "::1", path: "/", wantContain: "invalid host"},
		"space in host":         {host: "exa mple.com", path: "/", wantContain: "invalid host"},
		"relative path":         {host: "example.com", path: "healthz", wantContain: `must start with "/"`},
		"network-path":          {host: "example.com", path: "//evil.example/x", wantContain: `"//"`},
		"fragment in path":      {host: "example.com", path: "/a#b", wantContain: "fragment"},
		"control char in path":  {host: "example.com", path: "/a\x7f", wantContain: "invalid path"},
		"newline in path":       {host: "example.com", path: "/a\nb", wantContain: "invalid path"},
		"bad escape in path":    {host: "example.com", path: "/%zz", wantContain: "invalid path"},
		"host error names host": {host: "gopher://x", path: "/", wantContain: `invalid host "gopher://x"`},
	}
	for name, tc := range invalid {
		t.Run("invalid/"+name, func(t *testing.T) {
			t.Parallel()
			got, err := probing.BuildURL(tc.host, tc.path)
			require.Error(t, err, "got %q", got)
			assert.Empty(t, got)
			assert.Contains(t, err.Error(), tc.wantContain)
			assert.True(t, strings.HasPrefix(err.Error(), "build URL: "), err.Error())
		})
	}
}
