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

	"golang.org/x/net/http/httpguts"
)

// oneShotTransport sends a plain-HTTP request over a connection of its
// own, in the caller's goroutine, and closes the connection with the
// response body; every other request (https, and plain-HTTP ones that
// need what only http.Transport does, see handles) goes to next.
//
// It is what an http.Transport without keep-alive does for such a request
// (the same dialer, request writer, response parser, header limit and
// trace hooks), without the machinery a pool of kept connections needs:
// http.Transport dials in a goroutine of its own and runs a read loop and
// a write loop per connection, handing the request and the response
// between three goroutines. A fresh connection per probe is the default
// of every HTTP probe, so that machinery was most of the prober's CPU
// after the system calls. Redirects stay http.Client's, which calls
// RoundTrip once per hop.
type oneShotTransport struct {
	// dial connects to a host:port (see newDialer and familyDialer).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// maxHeaderBytes bounds the status lines and headers of a response,
	// informational (1xx) responses included, as
	// http.Transport.MaxResponseHeaderBytes does.
	maxHeaderBytes int64
	next           *http.Transport
}

var _ http.RoundTripper = (*oneShotTransport)(nil)

// requestWriters are the buffers requests are written through: one write
// system call for the request line and headers (and a small body).
var requestWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<10) }}

// responseBufferBytes is the read buffer of a connection, as
// http.Transport's default.
const responseBufferBytes = 4 << 10

// RoundTrip sends req and returns the response, whose body holds the
// connection until it is closed.
func (t *oneShotTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	conn, err := t.dial(ctx, "tcp", hostPort(req))
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	// The end of the probe's context (its timeout, or a cancellation)
	// closes the connection, which interrupts every read and write. (A
	// deadline on the connection could fire before the context is done,
	// and the error would not say that the probe timed out.)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	resp, err := t.exchange(ctx, conn, req)
	if err != nil {
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	resp.Body = &oneShotBody{body: resp.Body, conn: conn, stop: stop}
	return resp, nil
}

// handles tells whether RoundTrip sends req itself: plain HTTP to an ASCII
// host (http.Transport converts other names to punycode), with a valid
// method and valid header fields (http.Transport rejects the others with
// its own errors) and without "Expect: 100-continue" (whose wait for the
// server is http.Transport's).
func (t *oneShotTransport) handles(req *http.Request) bool {
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

// exchange writes req on conn and reads the response (its body unread).
func (t *oneShotTransport) exchange(ctx context.Context, conn net.Conn, req *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(ctx)
	werr, bodyFailed := writeRequest(conn, req)
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{Err: werr})
	}
	if bodyFailed {
		return nil, werr
	}
	// A write that failed did so on the connection (a server that closed
	// it, most often): the server may have answered first, and its answer
	// is read; if it did not, the read says why.
	limited := &headerLimitedConn{Conn: conn, left: t.maxHeaderBytes}
	br := bufio.NewReaderSize(limited, responseBufferBytes)
	if _, err := br.Peek(1); err != nil {
		return nil, err
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			if limited.left <= 0 {
				return nil, fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", t.maxHeaderBytes)
			}
			return nil, err
		}
		// Informational responses (but 101, which is final) precede the
		// response; the header limit counts them all.
		if resp.StatusCode >= 100 && resp.StatusCode <= 199 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		limited.left = -1 // no limit for the body
		return resp, nil
	}
}

// writeRequest writes req on conn, asking the server to close the
// connection after its response, and closes req's body. bodyFailed tells
// that err is the body's own (reading it failed): net/http reports a
// failed write of the body as a failed read too, with a type of its own.
func writeRequest(conn net.Conn, req *http.Request) (err error, bodyFailed bool) {
	closing := *req // RoundTrip must not change the caller's request
	closing.Close = true
	var body *recordingBody
	if req.Body != nil && req.Body != http.NoBody {
		body = &recordingBody{ReadCloser: req.Body}
		closing.Body = body
	}
	bw := requestWriters.Get().(*bufio.Writer)
	bw.Reset(conn)
	defer func() {
		bw.Reset(nil)
		requestWriters.Put(bw)
	}()
	if err := closing.Write(bw); err != nil {
		return err, body != nil && body.err != nil
	}
	return bw.Flush(), false
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

// hostPort is the address req's URL names, with the HTTP port by default.
func hostPort(req *http.Request) string {
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(req.URL.Hostname(), port)
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
// (exchange reports it as http.Transport does).
var errHeaderLimit = errors.New("response header limit reached")

// oneShotBody is the body of a oneShotTransport response: closing it
// closes the connection at once, without reading the rest (which a hostile
// server could make endless).
type oneShotBody struct {
	body io.ReadCloser
	conn net.Conn
	stop func() bool

	mu     sync.Mutex
	closed bool
}

// Read reads the body as the response's parser delivers it.
func (b *oneShotBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.body.Read(p)
}

// Close closes the connection; later reads fail.
func (b *oneShotBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.stop()
	return b.conn.Close()
}
