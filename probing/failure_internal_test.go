package probing

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTargetAddr(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		url  string
		want string
	}{
		"http, port given":     {url: "http://example.com:8080/x", want: "example.com:8080"},
		"http, default port":   {url: "http://example.com/", want: "example.com:80"},
		"https, default port":  {url: "https://example.com/", want: "example.com:443"},
		"IPv6 literal":         {url: "https://[::1]/", want: "[::1]:443"},
		"redacted credentials": {url: "http://user:***@example.com/", want: "example.com:80"},
		"does not parse":       {url: "http://%%/", want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, targetAddr(tc.url))
		})
	}
}
