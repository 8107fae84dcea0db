package probing

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeftOrigin compares origins as the web does: scheme, host and port,
// the default port of the scheme explicit and the case ignored; a chain
// that went to another origin has left it for good.
func TestLeftOrigin(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		chain []string // the first request, the ones after it, then the next
		left  bool
	}{
		"same URL":                    {chain: []string{"https://example.com/a", "https://example.com/b"}},
		"default https port explicit": {chain: []string{"https://example.com/", "https://example.com:443/"}},
		"default http port explicit":  {chain: []string{"http://example.com:80/", "http://example.com/"}},
		"host in upper case":          {chain: []string{"https://example.com/", "HTTPS://Example.COM/"}},
		"IPv6 with the default port":  {chain: []string{"http://[::1]/", "http://[::1]:80/"}},
		"https to http":               {chain: []string{"https://example.com/", "http://example.com/"}, left: true},
		"http to https":               {chain: []string{"http://example.com/", "https://example.com/"}, left: true},
		"https to http, port kept":    {chain: []string{"https://example.com:8443/", "http://example.com:8443/"}, left: true},
		"port 443 over http":          {chain: []string{"https://example.com/", "http://example.com:443/"}, left: true},
		"another port":                {chain: []string{"https://example.com/", "https://example.com:8443/"}, left: true},
		"a subdomain":                 {chain: []string{"https://example.com/", "https://api.example.com/"}, left: true},
		"a trailing dot":              {chain: []string{"https://example.com/", "https://example.com./"}, left: true},
		"away and back":               {chain: []string{"https://example.com/", "https://other.example/", "https://example.com/"}, left: true},
		"downgraded and back":         {chain: []string{"https://example.com/", "http://example.com/", "https://example.com/"}, left: true},
		"within the origin, thrice":   {chain: []string{"https://example.com/", "https://example.com/a", "https://EXAMPLE.com:443/b"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reqs := make([]*http.Request, len(tc.chain))
			for i, raw := range tc.chain {
				u, err := url.Parse(raw)
				require.NoError(t, err)
				reqs[i] = &http.Request{URL: u}
			}
			assert.Equal(t, tc.left, leftOrigin(reqs[len(reqs)-1], reqs[:len(reqs)-1]))
		})
	}
}
