package probing

import (
	"net/http"
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
