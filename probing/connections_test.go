package probing_test

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// A probe resolves, connects and shakes hands every time, unless its target
// reuses connections: then it sees only the HTTP answer, and the tests show
// what that hides.

// connCounter counts the connections a server accepted and closed.
type connCounter struct{ opened, closed atomic.Int64 }

// track is an http.Server's ConnState.
func (c *connCounter) track(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		c.opened.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.closed.Add(1)
	}
}

func TestHTTPProberConnectionPerProbe(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tls, http2, reuse bool
		wantConns         int64
	}{
		"http: one connection per probe":              {wantConns: 3},
		"HTTP/1.1 over TLS: one connection per probe": {tls: true, wantConns: 3},
		"HTTP/2: one connection per probe":            {tls: true, http2: true, wantConns: 3},
		"http, reuseConnections: one in all":          {reuse: true, wantConns: 1},
		"HTTP/2, reuseConnections: one in all":        {tls: true, http2: true, reuse: true, wantConns: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prober := newProber(t, newDNS(t), probing.ProberOptions{})
			var conns connCounter
			var proto atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				proto.Store(int64(r.ProtoMajor))
				_, _ = io.WriteString(w, "ok")
			}))
			srv.Config.ConnState = conns.track
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.EnableHTTP2 = tc.http2
			target := probing.TargetSpec{Method: http.MethodGet, Timeout: relaxedTimeout, ReuseConnections: tc.reuse}
			wantPhases := []probing.Phase{probing.PhaseDNS, probing.PhaseConnect, probing.PhaseProcessing, probing.PhaseTransfer}
			if tc.tls {
				srv.StartTLS()
				// httptest's certificate names example.com and 127.0.0.1.
				target.TLS = probing.TLSOptions{RootCAs: serverCA(srv), ServerName: "example.com"}
				wantPhases = append(wantPhases, probing.PhaseTLS)
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			target.URL = byName(t, srv) + "/"

			for i, method := range []string{http.MethodGet, http.MethodGet, http.MethodHead} {
				target.Method = method
				res := probe(t.Context(), prober, target)
				require.True(t, res.Success, "probe %d: %+v", i, res)
				phases := res.Phases.Happened()
				if i == 0 || !tc.reuse {
					assert.Subset(t, phases, wantPhases, "probe %d goes through every step", i)
				} else {
					assert.NotContains(t, phases, probing.PhaseConnect, "probe %d reuses the connection", i)
				}
			}
			assert.Equal(t, tc.wantConns, conns.opened.Load(), "connections accepted")
			assert.EqualValues(t, map[bool]int{false: 1, true: 2}[tc.http2], proto.Load(), "HTTP version")
			if !tc.reuse {
				assert.Eventually(t, func() bool { return conns.closed.Load() == conns.opened.Load() }, relaxedTimeout, 10*time.Millisecond,
					"no connection outlives its probe: %d opened, %d closed", conns.opened.Load(), conns.closed.Load())
			}
		})
	}
}

// listenPair listens on the same port of 127.0.0.1 and 127.0.0.2, for a
// name whose DNS answer moves from one to the other.
func listenPair(t *testing.T) (a, b net.Listener, port string) {
	t.Helper()
	var err error
	for range 10 {
		if a, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatalf("listen on 127.0.0.1: %v", err)
		}
		_, port, _ = net.SplitHostPort(a.Addr().String())
		if b, err = net.Listen("tcp", net.JoinHostPort("127.0.0.2", port)); err == nil {
			return a, b, port
		}
		_ = a.Close() // the port is taken on 127.0.0.2: try another
	}
	t.Fatalf("listen on the same port of 127.0.0.1 and 127.0.0.2: %v", err)
	return nil, nil, ""
}

// serveStatus serves code on ln until the test ends.
func serveStatus(t *testing.T, ln net.Listener, code int) {
	t.Helper()
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
}

func TestHTTPProberFollowsDNS(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		reuse bool
		// Status codes of the probes after the name moved to 127.0.0.2
		// (which answers 201) and after it was removed.
		wantMoved, wantRemoved int
		wantRemovedReason      probing.Reason
	}{
		"fresh connections follow the name": {
			wantMoved: http.StatusCreated, wantRemoved: 0, wantRemovedReason: probing.ReasonDNSFailed,
		},
		"reuseConnections keeps talking to the old address": {
			reuse: true, wantMoved: http.StatusOK, wantRemoved: http.StatusOK, wantRemovedReason: probing.ReasonSucceeded,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b, port := listenPair(t)
			serveStatus(t, a, http.StatusOK)
			serveStatus(t, b, http.StatusCreated)
			dns := probetest.NewTestDNSServer(t, map[string][]net.IP{"moving.test": {net.IPv4(127, 0, 0, 1)}})
			prober := newProber(t, dns, probing.ProberOptions{})
			target := probing.TargetSpec{URL: "http://moving.test:" + port + "/", Method: http.MethodGet, Timeout: relaxedTimeout, ReuseConnections: tc.reuse}

			res := probe(t.Context(), prober, target)
			require.Equal(t, http.StatusOK, res.StatusCode, "127.0.0.1 answers: %+v", res)

			require.NoError(t, dns.SetRecords(map[string][]net.IP{"moving.test": {net.IPv4(127, 0, 0, 2)}}))
			res = probe(t.Context(), prober, target)
			assert.Equal(t, tc.wantMoved, res.StatusCode, "after the move: %+v", res)

			require.NoError(t, dns.SetRecords(nil))
			res = probe(t.Context(), prober, target)
			assert.Equal(t, tc.wantRemovedReason, res.Reason, "after the removal: %+v", res)
			assert.Equal(t, tc.wantRemoved, res.StatusCode)
			if tc.wantRemovedReason == probing.ReasonDNSFailed {
				assert.Equal(t, `Get "http://moving.test:`+port+`/": dial tcp: lookup moving.test on `+dns.Addr()+`: no such host`, res.Message)
			}
		})
	}
}

func TestHTTPProberFollowsCertificate(t *testing.T) {
	t.Parallel()
	now := time.Now()
	before := probetest.NewCertificate(t, "renewed.test", now.Add(-time.Hour), now.Add(48*time.Hour))
	after := probetest.NewCertificate(t, "renewed.test", now.Add(-time.Hour), now.Add(96*time.Hour))

	tests := map[string]struct {
		reuse      bool
		wantExpiry time.Time
	}{
		"fresh connections see the new certificate":   {wantExpiry: after.X509.NotAfter},
		"reuseConnections keeps the old one's expiry": {reuse: true, wantExpiry: before.X509.NotAfter},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var served atomic.Pointer[tls.Certificate]
			served.Store(&before.TLS)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			// GetCertificate answers only handshakes that send a server name
			// (httptest's own certificate answers the others).
			srv.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return served.Load(), nil }}
			srv.StartTLS()
			t.Cleanup(srv.Close)
			prober := newProber(t, newDNS(t), probing.ProberOptions{})
			target := probing.TargetSpec{URL: srv.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout, ReuseConnections: tc.reuse,
				TLS: probing.TLSOptions{RootCAs: slices.Concat(before.PEM, after.PEM), ServerName: "renewed.test"}}

			res := probe(t.Context(), prober, target)
			require.True(t, res.Success, "%+v", res)
			require.NotNil(t, res.CertificateExpiry)
			assert.True(t, res.CertificateExpiry.Equal(before.X509.NotAfter), "first expiry %s", res.CertificateExpiry)

			served.Store(&after.TLS)
			res = probe(t.Context(), prober, target)
			require.True(t, res.Success, "%+v", res)
			require.NotNil(t, res.CertificateExpiry)
			assert.True(t, res.CertificateExpiry.Equal(tc.wantExpiry), "expiry after the renewal %s, want %s", res.CertificateExpiry, tc.wantExpiry)
		})
	}
}

func TestHTTPProberClosedListener(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		reuse      bool
		wantReason probing.Reason
	}{
		"fresh connections find the listener gone": {wantReason: probing.ReasonConnectionFailed},
		"reuseConnections still reads Ready":       {reuse: true, wantReason: probing.ReasonSucceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			// An http.Server whose listener closes while the connections
			// it accepted stay open and keep answering.
			srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ReadHeaderTimeout: relaxedTimeout}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			t.Cleanup(func() {
				_ = srv.Close()
				<-served
			})
			prober := newProber(t, newDNS(t), probing.ProberOptions{})
			url := "http://" + ln.Addr().String() + "/"
			target := probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout, ReuseConnections: tc.reuse}

			res := probe(t.Context(), prober, target)
			require.True(t, res.Success, "%+v", res)

			require.NoError(t, ln.Close())
			select {
			case err := <-served:
				require.True(t, errors.Is(err, net.ErrClosed), "Serve: %v", err)
				served <- err // for the cleanup
			case <-time.After(relaxedTimeout):
				t.Fatal("Serve did not return after its listener closed")
			}

			res = probe(t.Context(), prober, target)
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			if tc.wantReason == probing.ReasonConnectionFailed {
				assert.Equal(t, `Get "`+url+`": dial tcp `+ln.Addr().String()+`: connect: connection refused`, res.Message)
			}
		})
	}
}
