package probing_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

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
		res := prober.Probe(t.Context(), probing.Target{
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
			res := prober.Probe(t.Context(), probing.Target{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout})
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
	target := probing.Target{URL: "http://" + ln.Addr().String() + "/", Method: http.MethodPut, Timeout: relaxedTimeout, Body: strings.Repeat("x", 16<<10)}
	for range 20 {
		res := prober.Probe(t.Context(), target)
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
	res := prober.Probe(t.Context(), probing.Target{
		URL: url, Method: http.MethodGet, Timeout: relaxedTimeout,
		Headers: []probing.Header{{Name: "X-Token", Value: "a\nb", Sensitive: true}},
	})
	assert.False(t, res.Success)
	assert.Equal(t, `Get "`+url+`": net/http: invalid header field value for "X-Token"`, res.Message, "%+v", res)
}
