package probetest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Hit is one request a Target received.
type Hit struct {
	Path string
	Time time.Time
	// Header is the request's header, for example to tell which replica
	// sent it.
	Header http.Header
}

// Target is an HTTP server on loopback (127.0.0.1 unless NewTargetAt says
// otherwise) whose answer tests control and that
// records every request it receives.
type Target struct {
	server *httptest.Server
	status atomic.Int32
	delay  atomic.Int64

	mu   sync.Mutex
	hits []Hit
}

// NewTarget starts a Target that answers 200 until told otherwise.
func NewTarget() *Target {
	t := &Target{}
	t.status.Store(http.StatusOK)
	t.server = httptest.NewServer(http.HandlerFunc(t.serve))
	return t
}

// NewTargetAt starts a Target like NewTarget on another loopback address
// of 127.0.0.0/8, such as 127.0.0.2 (a free port).
func NewTargetAt(ip string) (*Target, error) {
	if addr := net.ParseIP(ip); addr == nil || !addr.IsLoopback() {
		return nil, fmt.Errorf("starting target: %q is no loopback address", ip)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("starting target on %s: %w", ip, err)
	}
	t := &Target{}
	t.status.Store(http.StatusOK)
	t.server = httptest.NewUnstartedServer(http.HandlerFunc(t.serve))
	_ = t.server.Listener.Close()
	t.server.Listener = l
	t.server.Start()
	return t, nil
}

// NewTLSTarget starts a Target like NewTarget, serving HTTPS with a
// self-signed certificate (httptest's, valid for 127.0.0.1 and far from
// expiry): probes must skip verification (spec.tls.insecureSkipVerify).
func NewTLSTarget() *Target {
	t := &Target{}
	t.status.Store(http.StatusOK)
	t.server = httptest.NewTLSServer(http.HandlerFunc(t.serve))
	return t
}

func (t *Target) serve(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	t.hits = append(t.hits, Hit{Path: r.URL.RequestURI(), Time: time.Now(), Header: r.Header.Clone()})
	t.mu.Unlock()
	if d := time.Duration(t.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(int(t.status.Load()))
}

// URL is the target's base URL, http://127.0.0.1:port.
func (t *Target) URL() string { return t.server.URL }

// Host is the target's host:port.
func (t *Target) Host() string { return t.server.Listener.Addr().String() }

// SetStatus makes the target answer with code from now on.
func (t *Target) SetStatus(code int) { t.status.Store(int32(code)) }

// SetDelay makes the target wait d before answering.
func (t *Target) SetDelay(d time.Duration) { t.delay.Store(int64(d)) }

// Hits returns a copy of the requests received so far.
func (t *Target) Hits() []Hit {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Hit(nil), t.hits...)
}

// Count returns how many requests for path (with query) were received.
func (t *Target) Count(path string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, h := range t.hits {
		if h.Path == path {
			n++
		}
	}
	return n
}

// Close shuts the server down, waiting for in-flight requests.
func (t *Target) Close() {
	t.server.CloseClientConnections()
	t.server.Close()
}

// HitsSince returns a copy of the requests received after the first n, in
// the order they arrived: a test that polls a busy Target can read only
// what is new (n is the number of hits it has already read).
func (t *Target) HitsSince(n int) []Hit {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < 0 {
		n = 0
	}
	if n >= len(t.hits) {
		return nil
	}
	return append([]Hit(nil), t.hits[n:]...)
}
