package probetest

import (
	"bufio"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// dualPeekTimeout bounds how long a DualServer waits for the first byte
// of a connection, which tells TLS from plain HTTP.
const dualPeekTimeout = 10 * time.Second

// DualServer serves one handler over both plain HTTP and HTTPS on one
// loopback port: a connection whose first byte is 0x16 (a TLS handshake
// record) is served over TLS, any other as plain HTTP. A redirect from
// https://127.0.0.1:P to http://127.0.0.1:P is then a change of scheme
// alone, host and port kept. The handler tells the two apart by
// Request.TLS.
type DualServer struct {
	ln   net.Listener
	port string
}

// NewTestDualServer starts a DualServer on 127.0.0.1 with cert for TLS,
// closed (and waited for) when the test ends.
func NewTestDualServer(t testing.TB, cert tls.Certificate, handler http.Handler) *DualServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("probetest: listen: %v", err)
	}
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatalf("probetest: listener address: %v", err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: dualPeekTimeout,
		ErrorLog:          log.New(io.Discard, "", 0), // handshakes that fail are the tests' business
	}
	sniffing := newSniffingListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(sniffing)
	}()
	t.Cleanup(func() {
		_ = srv.Close() // closes sniffing too
		_ = sniffing.Close()
		<-done
	})
	return &DualServer{ln: ln, port: port}
}

// Addr returns the server's address, 127.0.0.1:port.
func (s *DualServer) Addr() string { return s.ln.Addr().String() }

// Port returns the server's port.
func (s *DualServer) Port() string { return s.port }

// sniffingListener hands out its connections as TLS server connections
// when they start with a TLS handshake record (0x16), as plain ones
// otherwise; the byte it peeked at is read again by either. Each
// connection waits for its first byte in a goroutine of its own, so that
// a client that sends nothing delays no other; Close ends them all.
type sniffingListener struct {
	net.Listener
	tls   *tls.Config
	conns chan net.Conn
	done  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	pending map[net.Conn]struct{} // connections whose first byte is awaited
	closed  bool
}

func newSniffingListener(ln net.Listener, config *tls.Config) *sniffingListener {
	l := &sniffingListener{Listener: ln, tls: config, conns: make(chan net.Conn), done: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	l.wg.Go(l.acceptLoop)
	return l
}

func (l *sniffingListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = c.Close()
			return
		}
		l.pending[c] = struct{}{}
		l.mu.Unlock()
		l.wg.Go(func() { l.sniff(c) })
	}
}

// sniff waits for c's first byte and hands c to Accept as what it is.
func (l *sniffingListener) sniff(c net.Conn) {
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(dualPeekTimeout))
	first, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
	if err != nil {
		_ = c.Close() // a client that sent nothing
		return
	}
	var conn net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == 0x16 {
		conn = tls.Server(conn, l.tls)
	}
	select {
	case l.conns <- conn:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *sniffingListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes the connections whose first byte is
// awaited and waits for every goroutine of the listener.
func (l *sniffingListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	for c := range l.pending {
		_ = c.Close()
	}
	l.mu.Unlock()
	err := l.Listener.Close()
	l.wg.Wait()
	return err
}

// peekedConn is a connection read through the reader that peeked at it.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
