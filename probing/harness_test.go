package probing_test

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// The harness of the prober tests: loopback servers and DNS, and a prober
// that asks only that DNS. Nothing here sends traffic outside 127.0.0.0/8.

// Timing margins are generous on purpose: the tests share two cores with
// other heavy work (race detector, compilers, an API server).
const (
	// slack is how much later than its timeout a probe may return.
	slack = 2 * time.Second
	// relaxedTimeout is the timeout of probes that are not about timing.
	relaxedTimeout = 10 * time.Second
)

// probe builds spec and probes it with p, as the callers of probers do: a
// spec that NewTarget refuses is not probed, and gives the Result a
// prober gives a target it cannot probe (ReasonInvalidTarget, with
// NewTarget's message), so that tables can hold valid and invalid specs.
func probe(ctx context.Context, p probing.Prober, spec probing.TargetSpec) probing.Result {
	target, err := probing.NewTarget(spec)
	if err != nil {
		return probing.Result{Reason: probing.ReasonInvalidTarget, Message: err.Error()}
	}
	return p.Probe(ctx, target)
}

// mustTarget builds spec, failing the test when NewTarget refuses it.
func mustTarget(t testing.TB, spec probing.TargetSpec) probing.Target {
	t.Helper()
	target, err := probing.NewTarget(spec)
	require.NoError(t, err)
	return target
}

// newDNS starts a loopback DNS server knowing healthy.test.
func newDNS(t testing.TB) *probetest.DNSServer {
	t.Helper()
	return probetest.NewTestDNSServer(t, map[string][]net.IP{
		"healthy.test": {net.IPv4(127, 0, 0, 1)},
	})
}

// newProber returns a prober whose resolver asks dns: tests never use the
// system resolver.
func newProber(t testing.TB, dns *probetest.DNSServer, opts probing.ProberOptions) *probing.HTTPProber {
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

// closedPort returns a loopback address (host:port) that refuses every
// connection while the test runs (see probetest.RefusedAddr).
func closedPort(t *testing.T) string { return probetest.RefusedAddr(t) }

// untilDone waits for the request to be cancelled (or for max, as a safety
// net), so that slow handlers never outlive the probe.
func untilDone(r *http.Request, max time.Duration) {
	select {
	case <-r.Context().Done():
	case <-time.After(max):
	}
}

// resetServer accepts connections, reads the request and resets the
// connection without answering.
func resetServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	resetOn(t, ln)
	return "http://" + ln.Addr().String() + "/"
}

// resetOn serves ln as resetServer does, until the test ends.
func resetOn(t *testing.T, ln net.Listener) {
	t.Helper()
	serveRaw(t, ln, func(c net.Conn) {
		_, _ = http.ReadRequest(bufio.NewReader(c))
		_ = c.(*net.TCPConn).SetLinger(0) // close with RST
	})
}

// closingServer accepts connections on ln (a new loopback listener when
// nil) and closes each after before(c), until the test ends. It returns
// its address.
func closingServer(t *testing.T, ln net.Listener, before func(c net.Conn)) string {
	t.Helper()
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
	}
	serveRaw(t, ln, func(c net.Conn) {
		before(c)
		_ = c.Close()
	})
	return ln.Addr().String()
}

// serveRaw accepts connections on ln until the test ends and hands each
// to handle, with a deadline, closing it when handle returns. The test
// waits for every handler.
func serveRaw(t *testing.T, ln net.Listener, handle func(c net.Conn)) {
	t.Helper()
	probetest.ServeConns(t, ln, relaxedTimeout, handle)
}

// seen is what a recording server saw of the last request.
type seen struct {
	mu     sync.Mutex
	method string
	host   string
	header http.Header
	body   string
}

func (s *seen) get() (method, host string, header http.Header, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.method, s.host, s.header.Clone(), s.body
}

// recordingServer answers 200 with a fixed body and remembers the request.
func recordingServer(t *testing.T) (*httptest.Server, *seen) {
	t.Helper()
	rec := &seen{}
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.method, rec.host, rec.header, rec.body = r.Method, r.Host, r.Header.Clone(), string(body)
		rec.mu.Unlock()
		_, _ = io.WriteString(w, `{"status": "ok"}`)
	}))
	return srv, rec
}

// startTLSServer serves 200 over TLS with cert (httptest's own when nil)
// and at most TLS version maxVersion (when not zero).
func startTLSServer(t *testing.T, cert *probetest.Certificate, maxVersion uint16) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake errors are expected
	srv.TLS = &tls.Config{MaxVersion: maxVersion}
	if cert != nil {
		srv.TLS.Certificates = []tls.Certificate{cert.TLS}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func serverCA(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// probeServer serves the paths of the probeCase tables: /ok, /error (500),
// /nocontent (204), /redirect (to /ok), /loop (to itself), /head (405 but
// for HEAD), /user-agent (400 but for webchecker's) and /truncated (hangs
// up in the middle of the body).
func probeServer(t *testing.T) *httptest.Server {
	t.Helper()
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
	return startServer(t, mux)
}

// probeCase is a probe of a URL and the result it must give.
type probeCase struct {
	url      string // absolute
	method   string // empty means GET
	expected []int
	follow   bool

	wantSuccess bool
	wantReason  probing.Reason
	wantCode    int
	wantMessage string // exact, when set
}

// runProbeCases probes the URL of every case, in parallel, and checks the
// results.
func runProbeCases(t *testing.T, prober *probing.HTTPProber, cases map[string]probeCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			target := probing.TargetSpec{
				URL:                 tc.url,
				Method:              cmp.Or(tc.method, http.MethodGet),
				Timeout:             relaxedTimeout,
				ExpectedStatusCodes: tc.expected,
				FollowRedirects:     tc.follow,
			}
			res := probe(t.Context(), prober, target)
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
}
