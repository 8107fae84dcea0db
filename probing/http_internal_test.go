package probing

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A probe's request carries a copy of the URL NewTarget parsed, as
// http.NewRequest would have parsed it: the same URL and Host, an empty
// port removed.
func TestNewRequestAsNewRequest(t *testing.T) {
	t.Parallel()
	p := NewHTTPProber(ProberOptions{})
	for _, raw := range []string{
		"http://example.test/",
		"http://example.test:8080/a%20b/c?x=1&y=%2F",
		"http://example.test:/health",
		"http://[::1]:/x",
		"http://[::1]:8080",
		"https://[fe80::1%25eth0]:8443/",
		"http://example.test",
	} {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			target := mustBuild(t, TargetSpec{URL: raw, Method: http.MethodGet, Timeout: time.Second})
			got, err := p.newRequest(context.Background(), target, &probeContext{})
			require.NoError(t, err)
			want, err := http.NewRequest(http.MethodGet, raw, nil)
			require.NoError(t, err)
			assert.Equal(t, want.URL, got.URL)
			assert.Equal(t, want.Host, got.Host)
			assert.NotSame(t, target.url, got.URL, "the probe's own copy")
		})
	}
}
