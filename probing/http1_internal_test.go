package probing

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// http1Transport sends plain-HTTP requests itself and leaves to
// http.Transport what only it does as net/http users expect.
func TestHTTP1TransportHandles(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		url    string
		method string
		header http.Header
		host   string
		want   bool
	}{
		"plain HTTP":                      {url: "http://example.test:8080/x", want: true},
		"plain HTTP, HEAD":                {url: "http://example.test/", method: http.MethodHead, want: true},
		"plain HTTP, a Host header":       {url: "http://127.0.0.1/", host: "example.test", want: true},
		"https":                           {url: "https://example.test/"},
		"a name that is not ASCII":        {url: "http://bücher.test/"},
		"a Host that is not ASCII":        {url: "http://127.0.0.1/", host: "bücher.test"},
		"Expect: 100-continue":            {url: "http://example.test/", header: http.Header{"Expect": {"100-continue"}}},
		"a header value with a line feed": {url: "http://example.test/", header: http.Header{"Authorization": {"Bearer a\nb"}}},
		"a header name with a space":      {url: "http://example.test/", header: http.Header{"X Bad": {"v"}}},
		"a method that is not a token":    {url: "http://example.test/", method: "GET X"},
	}
	transport := &http1Transport{}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodGet, tc.url, nil)
			require.NoError(t, err)
			if tc.method != "" {
				req.Method = tc.method
			}
			for k, v := range tc.header {
				req.Header[k] = v
			}
			req.Host = tc.host
			assert.Equal(t, tc.want, transport.handles(req))
		})
	}
}

// writeBodiless writes what Request.Write writes, byte for byte, for the
// requests it takes, and nothing for the others.
func TestWriteBodilessAsRequestWrite(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		method, url, host string
		rawQuery          string // replaces the URL's, as it is
		header            http.Header
		close             bool
		body              string
		taken             bool
	}{
		"GET, closing":                     {url: "http://127.0.0.1:8080/health?full=1", close: true, taken: true},
		"GET, kept":                        {url: "http://127.0.0.1:8080/", taken: true},
		"no method is GET":                 {method: "-", url: "http://example.test/", taken: true},
		"HEAD":                             {method: http.MethodHead, url: "http://example.test/x", close: true, taken: true},
		"headers, sorted":                  {url: "http://example.test/", header: http.Header{"X-B": {"2"}, "X-A": {"1", "one"}, "Accept": {"*/*"}}, taken: true},
		"a Host header":                    {url: "http://127.0.0.1/", host: "example.test:81", taken: true},
		"an IPv6 literal":                  {url: "http://[::1]:8080/", taken: true},
		"an escaped path":                  {url: "http://example.test/a%20b/c%2Fd", taken: true},
		"an empty User-Agent":              {url: "http://example.test/", header: http.Header{"User-Agent": {""}}, taken: true},
		"a User-Agent with spaces around":  {url: "http://example.test/", header: http.Header{"User-Agent": {"  probe 1  "}}, taken: true},
		"headers it writes on its own":     {url: "http://example.test/", header: http.Header{"Content-Length": {"3"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}, "Host": {"h"}}, taken: true},
		"a value with spaces and a tab":    {url: "http://example.test/", header: http.Header{"X-V": {" a\tb "}}, taken: true},
		"no User-Agent":                    {url: "http://example.test/", header: http.Header{"User-Agent": nil}},
		"a Connection field":               {url: "http://example.test/", header: http.Header{"Connection": {"keep-alive"}}, close: true},
		"POST":                             {method: http.MethodPost, url: "http://example.test/"},
		"a body":                           {url: "http://example.test/", body: "x"},
		"an IPv6 zone":                     {url: "http://[fe80::1%25eth0]:8080/"},
		"an invalid Host":                  {url: "http://example.test/", host: "a b"},
		"an escaped control character":     {url: "http://example.test/?a=%00", taken: true},
		"a control character in the query": {url: "http://example.test/", rawQuery: "a=\x01"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := newWriteTestRequest(t, tc.method, tc.url, tc.body)
			req.Host, req.Close = tc.host, tc.close
			for k, v := range tc.header {
				if v == nil {
					delete(req.Header, k)
					continue
				}
				req.Header[k] = v
			}
			if tc.rawQuery != "" {
				req.URL.RawQuery = tc.rawQuery
			}
			var got bytes.Buffer
			w := bufio.NewWriter(&got)
			taken := writeBodiless(w, req)
			require.NoError(t, w.Flush())
			require.Equal(t, tc.taken, taken)
			if !taken {
				assert.Empty(t, got.String())
				return
			}
			var want bytes.Buffer
			require.NoError(t, req.Write(&want))
			assert.Equal(t, want.String(), got.String())
		})
	}
}

// newWriteTestRequest is a request as a probe makes it: with the default
// User-Agent (method "-" is none at all).
func newWriteTestRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(http.MethodGet, url, r)
	require.NoError(t, err)
	req.Method = method
	if method == "" {
		req.Method = http.MethodGet
	}
	if method == "-" {
		req.Method = ""
	}
	req.Header.Set("User-Agent", DefaultUserAgent)
	return req
}
