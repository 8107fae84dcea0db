package probetest

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

const (
	// bannerIdleTimeout closes the connections of a BannerServer whose
	// client forgot about them.
	bannerIdleTimeout = 30 * time.Second
	// maxQueryBytes is how much a BannerServer reads at most while waiting
	// for its Query, and keeps of what clients sent (Received).
	maxQueryBytes = 64 << 10
)

// BannerOptions say how a BannerServer answers each connection. The zero
// value accepts connections and never answers: it sends nothing and keeps
// the connection open until the client closes it.
type BannerOptions struct {
	// IP is the loopback address to listen on: empty means 127.0.0.1.
	// Other addresses of 127.0.0.0/8 (or ::1) serve tests of egress
	// policies; an address outside the loopback range is refused.
	IP string
	// TLS, when set, makes the server shake hands with this certificate
	// before anything else.
	TLS *tls.Certificate
	// Banner is written as soon as the connection is up (after the TLS
	// handshake), as is; empty writes nothing.
	Banner string
	// Query, when not empty, is what the server waits for after the
	// banner: it reads until what it read contains Query, then writes
	// Reply. A client that closes first, or sends 64 KiB without the
	// query, gets no reply.
	Query string
	// Reply is written once Query was received.
	Reply string
	// Close makes the server close the connection once it wrote what it
	// had to (the banner, or the reply when there is a Query): without
	// Close it keeps the connection open until the client closes it. As
	// any TCP close, closing with unread bytes from the client (sent after
	// the Query) resets the connection.
	Close bool
}

// BannerServer is a loopback TCP server for tests of tcp and tls probes:
// it sends a banner, answers a query, closes early or never answers, as
// its BannerOptions say, over plain TCP or TLS. It is safe for concurrent
// use.
type BannerServer struct {
	opts  BannerOptions
	ln    net.Listener
	conns connSet

	mu        sync.Mutex // guards received
	received  []byte
	closeOnce sync.Once
	closeErr  error
}

// NewBannerServer starts a BannerServer answering as opts say. The caller
// must Close it.
func NewBannerServer(opts BannerOptions) (*BannerServer, error) {
	ip := opts.IP
	if ip == "" {
		ip = "127.0.0.1"
	}
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() {
		return nil, fmt.Errorf("probetest: %q is not a loopback address", ip)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("probetest: listen: %w", err)
	}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*opts.TLS}})
	}
	s := &BannerServer{opts: opts, ln: ln}
	s.conns.serve(ln, s.serveConn)
	return s, nil
}

// NewTestBannerServer is NewBannerServer for tests: it fails the test if
// the server cannot start and closes the server when the test ends.
func NewTestBannerServer(t testing.TB, opts BannerOptions) *BannerServer {
	t.Helper()
	s, err := NewBannerServer(opts)
	if err != nil {
		t.Fatalf("start banner server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close banner server: %v", err)
		}
	})
	return s
}

// Addr returns the address the server listens on, as host:port, for
// example "127.0.0.1:40021".
func (s *BannerServer) Addr() string { return s.ln.Addr().String() }

// Port returns the port the server listens on.
func (s *BannerServer) Port() string {
	_, port, _ := net.SplitHostPort(s.Addr())
	return port
}

// Accepted returns the number of connections accepted so far.
func (s *BannerServer) Accepted() int64 { return s.conns.accepted.Load() }

// Open returns the number of connections open now: accepted, and closed
// by neither end yet (as far as the server noticed).
func (s *BannerServer) Open() int { return s.conns.open() }

// Received returns what clients sent so far, all connections together,
// in the order it was read: its first 64 KiB.
func (s *BannerServer) Received() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.received)
}

// Close stops the listener, closes the open connections and waits for all
// the server's goroutines to return. It is safe to call more than once;
// later calls return the first call's result.
func (s *BannerServer) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.conns.close(s.ln.Close)
	})
	return s.closeErr
}

// serveConn answers one connection as the options say (conns closes it
// when serveConn returns).
func (s *BannerServer) serveConn(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(bannerIdleTimeout))
	if tc, ok := c.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			return
		}
	}
	if s.opts.Banner != "" {
		if _, err := io.WriteString(c, s.opts.Banner); err != nil {
			return
		}
	}
	if s.opts.Query != "" {
		if !s.awaitQuery(c) {
			return
		}
		if _, err := io.WriteString(c, s.opts.Reply); err != nil {
			return
		}
	}
	if s.opts.Close {
		return
	}
	_, _ = io.Copy(recorder{s}, c) // until the client closes (or the deadline)
}

// recorder is an io.Writer that keeps what it is given in Received.
type recorder struct{ s *BannerServer }

func (r recorder) Write(p []byte) (int, error) {
	r.s.record(p)
	return len(p), nil
}

// record keeps p in received, up to maxQueryBytes in all.
func (s *BannerServer) record(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if room := maxQueryBytes - len(s.received); room > 0 {
		s.received = append(s.received, p[:min(room, len(p))]...)
	}
}

// awaitQuery reads from c until what it read contains the Query, and
// reports whether it did.
func (s *BannerServer) awaitQuery(c net.Conn) bool {
	var got []byte
	buf := make([]byte, 4096)
	for len(got) < maxQueryBytes {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		s.record(buf[:n])
		if bytes.Contains(got, []byte(s.opts.Query)) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}
