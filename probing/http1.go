package probing

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// http1Transport sends plain-HTTP requests itself, in the caller's
// goroutine, over HTTP/1.1; every other request (https, and plain-HTTP
// ones that need what only http.Transport does, see handles) goes to next.
//
// It is what an http.Transport does for such a request (the same dialer,
// request writer, response parser, header limit and trace hooks) without
// the machinery of http.Transport's connections: it dials in a goroutine
// of its own and runs a read loop and a write loop per connection, handing
// request and response between three goroutines, which was most of the
// prober's CPU after the system calls. Redirects stay http.Client's, which
// calls RoundTrip once per hop.
//
// Without an idle pool, every request has a connection of its own,
// closed with the response's body ("Connection: close" asks the server to
// close it too). With one (targets with ReuseConnections), a response read
// to its end goes back to the pool, and a request takes the connection
// that went back last, unless it is older than the pool's timeout or the
// server closed it or sent something since (see http1Conn.idleUsable). A
// request that a kept connection's server had closed before the request
// reached it, with no byte of answer, is sent again on another connection
// when it can be (see replayable), as http.Transport does.
type http1Transport struct {
	// dial connects to a host:port (see newDialer and familyDialer).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// maxHeaderBytes bounds the status lines and headers of a response,
	// informational (1xx) responses included, as
	// http.Transport.MaxResponseHeaderBytes does.
	maxHeaderBytes int64
	// idle keeps connections between requests; nil for a connection per
	// request.
	idle *idlePool
	next tracedTransport
}

var _ http.RoundTripper = (*http1Transport)(nil)

// newHTTP1Transport returns the http1Transport in front of next, with
// next's dialer and header limit, and, when keep is set, an idle pool with
// next's limits.
func newHTTP1Transport(next *http.Transport, keep bool) *http1Transport {
	t := &http1Transport{dial: next.DialContext, maxHeaderBytes: next.MaxResponseHeaderBytes, next: tracedTransport{next}}
	if keep {
		t.idle = newIdlePool(next.MaxIdleConns, next.MaxIdleConnsPerHost, next.IdleConnTimeout)
	}
	return t
}

// responseBufferBytes is the read buffer of a connection, as
// http.Transport's default.
const responseBufferBytes = 4 << 10

// RoundTrip sends req and returns the response, whose body holds the
// connection until it is closed.
func (t *http1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.next.RoundTrip(req)
	}
	return t.roundTrip(req)
}

// roundTrip is RoundTrip for a request that t handles.
func (t *http1Transport) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	tracer := tracerOf(ctx)
	addr := webHostPort(req.URL)
	for {
		c, reused := t.idle.get(addr)
		if c == nil {
			// net.Dialer reports name resolution and connection through
			// httptrace hooks.
			conn, err := t.dial(httptrace.WithClientTrace(ctx, tracer.dialTrace()), "tcp", addr)
			if err != nil {
				closeRequestBody(req)
				return nil, err
			}
			c = newHTTP1Conn(conn)
		}
		resp, err := t.roundTripOn(ctx, tracer, c, addr, req)
		switch {
		case err == nil:
			return resp, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !reused || tracer.answered() || !replayable(req):
			return nil, err
		}
		// The server had closed the kept connection: again, on another.
		if req, err = rewound(req); err != nil {
			return nil, err
		}
	}
}

// roundTripOn sends req on c and returns the response, whose body gives c
// back to the pool or closes it. The end of the probe's context (its
// timeout, or a cancellation) closes c, which interrupts every read and
// write. (A deadline on the connection could fire before the context is
// done, and the error would not say that the probe timed out.)
func (t *http1Transport) roundTripOn(ctx context.Context, tracer *phaseTracer, c *http1Conn, addr string, req *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(ctx, c.close)
	resp, err := c.exchange(tracer, req, t.maxHeaderBytes, t.idle == nil)
	if err != nil {
		stop()
		c.close()
		return nil, err
	}
	keep := t.idle != nil && !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	resp.Body = &http1Body{body: resp.Body, sawEOF: resp.Body == http.NoBody, c: c, stop: stop, pool: t.idle, addr: addr, keep: keep}
	return resp, nil
}

// CloseIdleConnections closes the connections kept idle, here and in
// next.
func (t *http1Transport) CloseIdleConnections() {
	t.idle.closeAll()
	t.next.CloseIdleConnections()
}

// handles tells whether RoundTrip sends req itself: plain HTTP to an ASCII
// host (http.Transport converts other names to punycode), with a valid
// method and valid header fields (http.Transport rejects the others with
// its own errors) and without "Expect: 100-continue" (whose wait for the
// server is http.Transport's).
func (t *http1Transport) handles(req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" || !isASCII(req.URL.Host) || !isASCII(req.Host) {
		return false
	}
	if req.Method != "" && !httpguts.ValidHeaderFieldName(req.Method) { // a method is a token, as a field name is
		return false
	}
	if _, expect := req.Header["Expect"]; expect {
		return false
	}
	for name, values := range req.Header {
		if !httpguts.ValidHeaderFieldName(name) {
			return false
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// http1Conn is a connection http1Transport speaks on.
type http1Conn struct {
	conn    net.Conn
	limited *headerLimitedConn // conn, as br reads it
	br      *bufio.Reader
	// idleSince is when the connection went back to the idle pool.
	idleSince time.Time
	peeker    idlePeeker // see idleUsable
}

func newHTTP1Conn(conn net.Conn) *http1Conn {
	limited := &headerLimitedConn{Conn: conn, left: -1}
	return &http1Conn{conn: conn, limited: limited, br: bufio.NewReaderSize(limited, responseBufferBytes)}
}

func (c *http1Conn) close() { _ = c.conn.Close() }

// exchange writes req on c and reads the response (its body unread), its
// status lines and headers bounded by maxHeaderBytes, and reports the
// steps to tracer. closing asks the server to close the connection after
// its response.
func (c *http1Conn) exchange(tracer *phaseTracer, req *http.Request, maxHeaderBytes int64, closing bool) (*http.Response, error) {
	bodyFailed, werr := writeRequest(c.conn, req, closing)
	tracer.requestWritten()
	if bodyFailed {
		return nil, werr
	}
	// A write that failed did so on the connection (a server that closed
	// it, most often): the server may have answered first, and its answer
	// is read; if it did not, the read says why.
	c.limited.left = maxHeaderBytes
	defer func() { c.limited.left = -1 }() // no limit for the body
	if _, err := c.br.Peek(1); err != nil {
		return nil, err
	}
	tracer.gotFirstResponseByte()
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if c.limited.left == 0 {
				return nil, fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", maxHeaderBytes)
			}
			return nil, err
		}
		// Informational responses (but 101, which is final) precede the
		// response; the header limit counts them all.
		if resp.StatusCode >= 100 && resp.StatusCode <= 199 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, nil
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// headerLimitedConn is a connection whose reads stop once left bytes were
// read, while left is not negative: the header limit of a response.
type headerLimitedConn struct {
	net.Conn
	left int64
}

func (c *headerLimitedConn) Read(p []byte) (int, error) {
	if c.left < 0 {
		return c.Conn.Read(p)
	}
	if c.left == 0 {
		return 0, errHeaderLimit
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}

// errHeaderLimit ends the reads of a response whose headers are too large
// (http1Conn.exchange reports it as http.Transport does).
var errHeaderLimit = errors.New("response header limit reached")

// http1Body is the body of an http1Transport response. Closing it gives
// the connection back to the idle pool when the body was read to its end
// and the connection may be kept, and closes it otherwise, at once,
// without reading the rest (which a hostile server could make endless).
type http1Body struct {
	body   io.ReadCloser
	c      *http1Conn
	stop   func() bool // stops the context's closing of c
	pool   *idlePool   // nil: c is closed
	addr   string
	keep   bool // the request and response let c be kept
	mu     sync.Mutex
	sawEOF bool
	closed bool
}

// Read reads the body as the response's parser delivers it.
func (b *http1Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return 0, http.ErrBodyReadAfterClose
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		b.sawEOF = true
		b.mu.Unlock()
	}
	return n, err
}

// Close gives the connection back or closes it; later reads fail.
func (b *http1Body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	// stop fails when the probe's context already closed the connection.
	if b.stop() && b.keep && b.sawEOF && b.pool.put(b.addr, b.c) {
		return nil
	}
	b.c.close()
	return nil
}
