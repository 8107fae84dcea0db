package probing_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
)

// A plain-HTTP probe over a connection of its own (the default) sends its
// request as net/http's transport would, asking the server to close the
// connection, and reads through informational responses to the final
// one, within the header limit.
func TestHTTPProberOneConnectionExchange(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})

	t.Run("the request on the wire", func(t *testing.T) {
		t.Parallel()
		requests := make(chan string, 1)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		serveRaw(t, ln, func(c net.Conn) {
			br := bufio.NewReader(c)
			var head strings.Builder
			for {
				line, err := br.ReadString('\n')
				head.WriteString(line)
				if err != nil || line == "\r\n" {
					break
				}
			}
			body := make([]byte, len("ping"))
			_, _ = io.ReadFull(br, body)
			requests <- head.String() + string(body)
			_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		})
		url := "http://" + ln.Addr().String() + "/health?full=1"
		res := probe(t.Context(), prober, probing.TargetSpec{
			URL: url, Method: http.MethodPost, Timeout: relaxedTimeout, Body: "ping",
			Headers: []probing.Header{{Name: "X-Probe", Value: "yes"}},
		})
		require.True(t, res.Success, "%+v", res)
		assert.Equal(t, "POST /health?full=1 HTTP/1.1\r\n"+
			"Host: "+ln.Addr().String()+"\r\n"+
			"User-Agent: webchecker\r\n"+
			"Connection: close\r\n"+
			"Content-Length: 4\r\n"+
			"X-Probe: yes\r\n"+
			"\r\n"+
			"ping", <-requests)
	})

	tests := map[string]struct {
		response    string
		wantSuccess bool
		wantStatus  int
		wantContain string
	}{
		"informational responses before the final one": {
			response:    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			wantSuccess: true, wantStatus: 200,
		},
		"informational responses without end: the header limit counts them all": {
			response:    strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </"+strings.Repeat("a", 1000)+">\r\n\r\n", 1000),
			wantContain: "server response headers exceeded 65536 bytes; aborted",
		},
		"a chunked body": {
			response:    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			wantSuccess: true, wantStatus: 200,
		},
		"a body that ends with the connection": {
			response:    "HTTP/1.0 200 OK\r\n\r\nok",
			wantSuccess: true, wantStatus: 200,
		},
		"a body cut short": {
			response:    "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok",
			wantStatus:  200,
			wantContain: "read response body: unexpected EOF",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, tc.response)
			res := probe(t.Context(), prober, probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout})
			assert.Equal(t, tc.wantSuccess, res.Success, "%+v", res)
			assert.Equal(t, tc.wantStatus, res.StatusCode)
			assert.Contains(t, res.Message, tc.wantContain)
		})
	}
}

// A server that answers before reading the request's body and closes the
// connection: its answer is the probe's, whether or not the body was
// written by then.
func TestHTTPProberAnswerBeforeTheBody(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) {
		_, _ = c.Read(make([]byte, 16)) // a part of the request line
		_, _ = io.WriteString(c, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = c.(*net.TCPConn).SetLinger(0) // close with the rest unread: a reset
	})
	target := probing.TargetSpec{URL: "http://" + ln.Addr().String() + "/", Method: http.MethodPut, Timeout: relaxedTimeout, Body: strings.Repeat("x", 16<<10)}
	for range 20 {
		res := probe(t.Context(), prober, target)
		assert.Equal(t, probing.ReasonUnexpectedStatus, res.Reason, "%+v", res)
		assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	}
}

// What the one-connection path leaves to net/http's transport gets its
// answer: a header value that no request may carry (a Secret's value with
// a line break) is refused before anything is sent.
func TestHTTPProberInvalidHeaderValue(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	url := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	res := probe(t.Context(), prober, probing.TargetSpec{
		URL: url, Method: http.MethodGet, Timeout: relaxedTimeout,
		Headers: []probing.Header{{Name: "X-Token", Value: "a\nb", Sensitive: true}},
	})
	assert.False(t, res.Success)
	assert.Equal(t, `Get "`+url+`": net/http: invalid header field value for "X-Token"`, res.Message, "%+v", res)
}

// countingServer is an httptest server answering "ok" whose connections
// are counted.
func countingServer(t *testing.T, idleTimeout time.Duration) (*httptest.Server, *connCounter) {
	t.Helper()
	var conns connCounter
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = conns.track
	srv.Config.IdleTimeout = idleTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// countingRawServer serves every connection with handle until the test
// ends, and counts them. It returns its URL.
func countingRawServer(t *testing.T, handle func(br *bufio.Reader, c net.Conn)) (string, *atomic.Int64) {
	t.Helper()
	var accepted atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) {
		accepted.Add(1)
		handle(bufio.NewReader(c), c)
	})
	return "http://" + ln.Addr().String() + "/", &accepted
}

// reuseTarget is a GET of url over kept connections.
func reuseTarget(url string) probing.TargetSpec {
	return probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout, ReuseConnections: true}
}

// A kept connection that the server closed while it was idle is not used.
func TestHTTPProberKeptConnectionClosedWhileIdle(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	srv, conns := countingServer(t, 50*time.Millisecond)
	target := reuseTarget(srv.URL + "/")
	target.Method, target.Body = http.MethodPost, "x" // not sent again on a failure
	require.True(t, probe(t.Context(), prober, target).Success)
	require.Eventually(t, func() bool { return conns.closed.Load() == 1 }, relaxedTimeout, 5*time.Millisecond, "the server closes the idle connection")
	res := probe(t.Context(), prober, target)
	assert.True(t, res.Success, "%+v", res)
	assert.EqualValues(t, 2, conns.opened.Load())
}

// A kept connection idle for longer than IdleConnTimeout is closed and replaced.
func TestHTTPProberKeptConnectionExpires(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{IdleConnTimeout: 100 * time.Millisecond})
	srv, conns := countingServer(t, 0)
	require.True(t, probe(t.Context(), prober, reuseTarget(srv.URL+"/")).Success)
	require.True(t, probe(t.Context(), prober, reuseTarget(srv.URL+"/")).Success)
	require.EqualValues(t, 1, conns.opened.Load(), "kept while fresh")
	time.Sleep(150 * time.Millisecond) // the idle timeout is the subject
	require.True(t, probe(t.Context(), prober, reuseTarget(srv.URL+"/")).Success)
	assert.EqualValues(t, 2, conns.opened.Load())
	assert.Eventually(t, func() bool { return conns.closed.Load() == 1 }, relaxedTimeout, 5*time.Millisecond, "the expired one is closed")
}

// A response whose body was not read to its end closes its connection.
func TestHTTPProberKeptConnectionBodyNotReadToItsEnd(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{BodyLimit: 1024})
	var conns connCounter
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(make([]byte, 64<<10))
	}))
	srv.Config.ConnState = conns.track
	srv.Start()
	t.Cleanup(srv.Close)
	for range 2 {
		require.True(t, probe(t.Context(), prober, reuseTarget(srv.URL+"/")).Success)
	}
	assert.EqualValues(t, 2, conns.opened.Load())
	assert.Eventually(t, func() bool { return conns.closed.Load() >= 1 }, relaxedTimeout, 5*time.Millisecond)
}

// The pool keeps at most MaxIdleConnsPerHost connections per host, and CloseIdleConnections closes them.
func TestHTTPProberKeptConnectionsPerHost(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{MaxIdleConnsPerHost: 2})
	var conns connCounter
	release := make(chan struct{})
	var waiting sync.WaitGroup
	waiting.Add(4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		waiting.Done()
		<-release // four probes at once: four connections
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = conns.track
	srv.Start()
	t.Cleanup(srv.Close)
	var probes sync.WaitGroup
	for range 4 {
		probes.Go(func() { assert.True(t, probe(t.Context(), prober, reuseTarget(srv.URL+"/")).Success) })
	}
	waiting.Wait()
	close(release)
	probes.Wait()
	assert.EqualValues(t, 4, conns.opened.Load())
	assert.Eventually(t, func() bool { return conns.closed.Load() == 2 }, relaxedTimeout, 5*time.Millisecond, "two kept, two closed")
	prober.CloseIdleConnections()
	assert.Eventually(t, func() bool { return conns.closed.Load() == 4 }, relaxedTimeout, 5*time.Millisecond, "closed on demand")
}

// A connection on which the server sent bytes after a response is not used again.
func TestHTTPProberKeptConnectionBytesAfterAResponse(t *testing.T) {
	t.Parallel()
	url, accepted := countingRawServer(t, func(br *bufio.Reader, c net.Conn) {
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 500 Junk\r\n\r\n"); err != nil {
				return
			}
		}
	})
	prober := newProber(t, newDNS(t), probing.ProberOptions{}) // closes its connections before the server waits for them
	for range 3 {
		res := probe(t.Context(), prober, reuseTarget(url))
		assert.True(t, res.Success, "%+v", res)
	}
	assert.EqualValues(t, 3, accepted.Load())
}

// A request that finds its kept connection closed by the server, with no
// answer, goes again on a new connection when it may (GET), and fails
// when it may not (POST), as with net/http's transport.
func TestHTTPProberKeptConnectionClosedUnderARequest(t *testing.T) {
	t.Parallel()
	// Each connection answers its first request and closes on the second
	// without answering.
	url, accepted := countingRawServer(t, func(br *bufio.Reader, c net.Conn) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		_, _ = http.ReadRequest(br)
	})
	tests := map[string]struct {
		method      string
		wantSuccess bool
	}{
		"GET goes again":  {method: http.MethodGet, wantSuccess: true},
		"HEAD goes again": {method: http.MethodHead, wantSuccess: true},
		"POST does not":   {method: http.MethodPost},
		"PUT does not":    {method: http.MethodPut},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			prober := newProber(t, newDNS(t), probing.ProberOptions{})
			target := reuseTarget(url)
			target.Method = tc.method
			if !tc.wantSuccess {
				target.Body = "x" // replayable, but the method is not idempotent
			}
			require.True(t, probe(t.Context(), prober, target).Success)
			before := accepted.Load()
			res := probe(t.Context(), prober, target)
			assert.Equal(t, tc.wantSuccess, res.Success, "%+v", res)
			if tc.wantSuccess {
				assert.Equal(t, before+1, accepted.Load(), "again on a new connection")
			} else {
				method := tc.method[:1] + strings.ToLower(tc.method[1:])
				assert.Equal(t, method+` "`+url+`": the server closed the connection before answering`, res.Message)
			}
		})
	}
}
