package probing

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
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

// requestWriters are the buffers requests are written through: one write
// system call for the request line and headers (and a small body).
var requestWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<10) }}

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

// writeRequest writes req on conn, asking the server to close the
// connection after its response when closing is set, and closes req's
// body. bodyFailed tells that err is the body's own (reading it failed):
// net/http reports a failed write of the body as a failed read too, with
// a type of its own.
func writeRequest(conn net.Conn, req *http.Request, closing bool) (bodyFailed bool, err error) {
	out := *req // RoundTrip must not change the caller's request
	out.Close = out.Close || closing
	var body *recordingBody
	if req.Body != nil && req.Body != http.NoBody {
		body = &recordingBody{ReadCloser: req.Body}
		out.Body = body
	}
	bw := requestWriters.Get().(*bufio.Writer)
	bw.Reset(conn)
	defer func() {
		bw.Reset(nil)
		requestWriters.Put(bw)
	}()
	if !writeBodiless(bw, &out) {
		if err := out.Write(bw); err != nil {
			return body != nil && body.err != nil, err
		}
	}
	return false, bw.Flush()
}

// writeBodiless writes req to w as req.Write would, byte for byte, when
// req is what most probes send: a GET or HEAD without a body, to a valid
// Host without an IPv6 zone, with a User-Agent, without a Connection
// field; it reports false, writing nothing, for any other request.
// Request.Write formats its lines with fmt and builds a writer for the
// body, which was a tenth of a kept connection's probe. A write error
// stays in w, for its Flush.
func writeBodiless(w *bufio.Writer, req *http.Request) bool {
	if (req.Method != "" && req.Method != http.MethodGet && req.Method != http.MethodHead) ||
		(req.Body != nil && req.Body != http.NoBody) || req.ContentLength != 0 ||
		len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 || req.URL.Opaque != "" {
		return false
	}
	host := cmp.Or(req.Host, req.URL.Host)
	if host == "" || !httpguts.ValidHostHeader(host) || strings.Contains(host, "%") {
		return false
	}
	uri := req.URL.RequestURI()
	userAgent, hasUserAgent := req.Header["User-Agent"]
	_, hasConnection := req.Header["Connection"]
	if containsCTLByte(uri) || !hasUserAgent || hasConnection {
		return false
	}
	_, _ = w.WriteString(cmp.Or(req.Method, http.MethodGet))
	_ = w.WriteByte(' ')
	_, _ = w.WriteString(uri)
	_, _ = w.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = w.WriteString(host)
	_, _ = w.WriteString("\r\n")
	if ua := textproto.TrimString(userAgentLine.Replace(firstOrEmpty(userAgent))); ua != "" {
		_, _ = w.WriteString("User-Agent: ")
		_, _ = w.WriteString(ua)
		_, _ = w.WriteString("\r\n")
	}
	if req.Close {
		_, _ = w.WriteString("Connection: close\r\n")
	}
	_ = req.Header.WriteSubset(w, requestHeadWritten)
	_, _ = w.WriteString("\r\n")
	return true
}

// requestHeadWritten are the header fields that Request.Write writes on
// lines of its own, or never, rather than with the others.
var requestHeadWritten = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// userAgentLine keeps a User-Agent on one line, as Request.Write does.
var userAgentLine = strings.NewReplacer("\n", " ", "\r", " ")

func firstOrEmpty(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}

// containsCTLByte tells whether s has an ASCII control character, which
// Request.Write refuses in a request's URI.
func containsCTLByte(s string) bool {
	for i := range len(s) {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// recordingBody is a request body that remembers the error of its reads.
type recordingBody struct {
	io.ReadCloser
	err error
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
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

// replayable tells whether req may be sent again after a kept connection
// failed under it before any answer, as http.Transport decides: its body
// can be had again, and its method is idempotent (or it carries an
// idempotency key).
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xKey := req.Header["X-Idempotency-Key"]
	return key || xKey
}

// rewound returns req with its body from the start, to send it again.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	again := *req
	again.Body = body
	return &again, nil
}

// closeRequestBody closes req's body, as a RoundTrip that fails must.
func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
