package probing

import (
	"bufio"
	"cmp"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"
)

// The requests of http1Transport: writing one (writeBodiless for most
// probes, Request.Write for the others) and, after a kept connection
// failed under it, sending it again (replayable, rewound).

// requestWriters are the buffers requests are written through: one write
// system call for the request line and headers (and a small body).
var requestWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<10) }}

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
