package probing_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
)

func TestBuildURL(t *testing.T) {
	t.Parallel()
	valid := map[string]struct {
		host, path string
		want       string
	}{
		"host and root":            {host: "http://flant.ru", path: "/", want: "http://flant.ru/"},
		"bare host with port":      {host: "example.com:8080", path: "/healthz?full=1", want: "http://example.com:8080/healthz?full=1"},
		"https, empty path":        {host: "https://h", path: "", want: "https://h/"},
		"trailing slash":           {host: "https://example.com:8443/", path: "/status", want: "https://example.com:8443/status"},
		"bare host":                {host: "example.com", path: "/", want: "http://example.com/"},
		"bare IPv6 with port":      {host: "[::1]:8080", path: "/", want: "http://[::1]:8080/"},
		"IPv6 with scheme":         {host: "https://[2001:db8::1]", path: "/x", want: "https://[2001:db8::1]/x"},
		"IPv4":                     {host: "127.0.0.1:80", path: "/a/b", want: "http://127.0.0.1:80/a/b"},
		"upper case scheme":        {host: "HTTPS://example.com", path: "/", want: "https://example.com/"},
		"escaped path":             {host: "example.com", path: "/a%2Fb?q=a%20b", want: "http://example.com/a%2Fb?q=a%20b"},
		"query only":               {host: "example.com", path: "/?x=1&y=2", want: "http://example.com/?x=1&y=2"},
		"path with space escaped":  {host: "example.com", path: "/a b", want: "http://example.com/a%20b"},
		"query with space escaped": {host: "example.com", path: "/? ", want: "http://example.com/?%20"}, // found by FuzzProbePath
		"query escaped as needed":  {host: "example.com", path: "/s?q=a b&x=<\u00e9>&y=%41|", want: "http://example.com/s?q=a%20b&x=%3C%C3%A9%3E&y=%41%7C"},
	}
	for name, tc := range valid {
		t.Run("valid/"+name, func(t *testing.T) {
			t.Parallel()
			got, err := probing.BuildURL(tc.host, tc.path)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	invalid := map[string]struct {
		host, path  string
		wantContain string
	}{
		"empty host":            {host: "", path: "/", wantContain: "empty"},
		"other scheme":          {host: "ftp://example.com", path: "/", wantContain: `unsupported scheme "ftp"`},
		"query in host":         {host: "http://example.com?x=1", path: "/", wantContain: "query"},
		"empty query in host":   {host: "example.com?", path: "/", wantContain: "query"},
		"fragment in host":      {host: "http://example.com#top", path: "/", wantContain: "fragment"},
		"path in host":          {host: "http://example.com/api", path: "/", wantContain: `unexpected path "/api"`},
		"credentials in host":   {host: "http://user:pw@example.com", path: "/", wantContain: "credentials"},
		"scheme only":           {host: "http://", path: "/", wantContain: "missing host"},
		"port only":             {host: ":8080", path: "/", wantContain: "missing host"},
		"bad port":              {host: "example.com:http", path: "/", wantContain: "invalid port"},
		"port out of range":     {host: "example.com:70000", path: "/", wantContain: "invalid port"},
		"empty port":            {host: "example.com:", path: "/", wantContain: "empty port"},
		"unbracketed IPv6":      {host: "::1", path: "/", wantContain: "invalid host"},
		"space in host":         {host: "exa mple.com", path: "/", wantContain: "invalid host"},
		"relative path":         {host: "example.com", path: "healthz", wantContain: `must start with "/"`},
		"network-path":          {host: "example.com", path: "//evil.example/x", wantContain: `"//"`},
		"fragment in path":      {host: "example.com", path: "/a#b", wantContain: "fragment"},
		"control char in path":  {host: "example.com", path: "/a\x7f", wantContain: "invalid path"},
		"newline in path":       {host: "example.com", path: "/a\nb", wantContain: "invalid path"},
		"bad escape in path":    {host: "example.com", path: "/%zz", wantContain: "invalid path"},
		"host error names host": {host: "gopher://x", path: "/", wantContain: `invalid host "gopher://x"`},
	}
	for name, tc := range invalid {
		t.Run("invalid/"+name, func(t *testing.T) {
			t.Parallel()
			got, err := probing.BuildURL(tc.host, tc.path)
			require.Error(t, err, "got %q", got)
			assert.Empty(t, got)
			assert.Contains(t, err.Error(), tc.wantContain)
			assert.True(t, strings.HasPrefix(err.Error(), "build URL: "), err.Error())
		})
	}
}
