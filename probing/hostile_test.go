package probing_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
)

// Hostile targets: whatever a server sends, the prober keeps a bounded,
// valid message.

// rawServer answers every request with response, written as is, and hangs
// up. It returns the server's URL.
func rawServer(t *testing.T, response string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, response) // fails once the prober gives up
	})
	return "http://" + ln.Addr().String() + "/"
}

func TestHTTPProberHostileResponses(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := map[string]struct {
		response    string
		wantContain string
	}{
		"8 MiB status line": {
			response:    "HTTP/1.1 200 " + strings.Repeat("x", 8*mib) + "\r\n\r\n",
			wantContain: "server response headers exceeded 65536 bytes; aborted",
		},
		"8 MiB header line": {
			response:    "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("x", 8*mib) + "\r\n\r\n",
			wantContain: "server response headers exceeded 65536 bytes; aborted",
		},
		"many headers, 8 MiB in all": {
			response:    "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Many: "+strings.Repeat("x", 1000)+"\r\n", 8*1024) + "\r\n",
			wantContain: "server response headers exceeded 65536 bytes; aborted",
		},
		"malformed status code under the header limit, not quoted": {
			response:    "HTTP/1.1 " + strings.Repeat("9", 60<<10) + " OK\r\n\r\n",
			wantContain: "malformed HTTP status line",
		},
		"malformed header line of multibyte runes, not quoted": {
			response:    "HTTP/1.1 200 OK\r\n" + strings.Repeat("€", 20<<10) + "\xff\x1b[31m\r\n\r\n",
			wantContain: "malformed HTTP header line",
		},
	}
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, tc.response)
			res := probe(t.Context(), prober, probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout})
			t.Logf("message: %s", res.Message)
			assert.Equal(t, probing.ReasonConnectionFailed, res.Reason, "%.2000s", res.Message)
			assert.LessOrEqual(t, len(res.Message), probing.MaxMessageBytes)
			assert.True(t, utf8.ValidString(res.Message), "valid UTF-8")
			assert.True(t, strings.HasPrefix(res.Message, `Get "`+url+`": `), "names what failed")
			assert.Contains(t, res.Message, tc.wantContain)
			again := probe(t.Context(), prober, probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout})
			assert.True(t, res.SameOutcome(again), "a bounded message is stable")
		})
	}
}

func TestBoundMessage(t *testing.T) {
	t.Parallel()
	const max = probing.MaxMessageBytes
	tests := map[string]struct {
		msg  string
		want string // exact, when set
		// Bytes of msg the result starts and ends with, when cut.
		wantHead, wantTail string
	}{
		"short":                {msg: "dial tcp example.com:80: connect: connection refused", want: "dial tcp example.com:80: connect: connection refused"},
		"exactly the limit":    {msg: strings.Repeat("a", max), want: strings.Repeat("a", max)},
		"one byte over":        {msg: strings.Repeat("a", max+1), wantHead: strings.Repeat("a", 510), wantTail: strings.Repeat("a", 511)},
		"head and tail kept":   {msg: "Get: " + strings.Repeat("x", 10*max) + ": the cause", wantHead: "Get: xxx", wantTail: "xxx: the cause"},
		"invalid UTF-8":        {msg: "bad \xff\xfe bytes", want: "bad \uFFFD bytes"},
		"control characters":   {msg: "line\r\nbreak\tand \x1b[31mred\x7f", want: "line  break and \uFFFD[31mred\uFFFD"},
		"two-byte runes cut":   {msg: strings.Repeat("é", max)},
		"three-byte runes cut": {msg: strings.Repeat("€", max)},
		"four-byte runes cut":  {msg: "a" + strings.Repeat("😀", max)},
		"invalid bytes at the cut": {
			msg: strings.Repeat("a", 509) + "\xff\xff\xff" + strings.Repeat("€", max),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := probing.BoundMessage(tc.msg)
			assert.LessOrEqual(t, len(got), max)
			assert.True(t, utf8.ValidString(got), "valid UTF-8: %q", got)
			assert.Equal(t, got, probing.BoundMessage(tc.msg), "stable")
			assert.Equal(t, got, probing.BoundMessage(got), "bounding twice changes nothing")
			if tc.want != "" {
				assert.Equal(t, tc.want, got)
				return
			}
			assert.Contains(t, got, "…", "a cut is marked")
			assert.Greater(t, len(got), max-8, "a cut keeps close to the limit")
			assert.True(t, strings.HasPrefix(got, tc.wantHead), "head %q", got[:20])
			assert.True(t, strings.HasSuffix(got, tc.wantTail), "tail")
			// Every rune of the result but the marker comes whole from the
			// message (with invalid bytes replaced).
			head, tail, found := strings.Cut(got, "…")
			require.True(t, found)
			valid := strings.ToValidUTF8(tc.msg, "\uFFFD")
			assert.True(t, strings.HasPrefix(valid, head), "the head is the message's start")
			assert.True(t, strings.HasSuffix(valid, tail), "the tail is the message's end")
		})
	}
}
