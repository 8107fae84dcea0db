package checkspec_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
)

// TestParseDefaultProxy refuses a --proxy-url with credentials, and
// every error leaves the password out; the credentials given apart reach
// the proxy of every checker, never its description.
func TestParseDefaultProxy(t *testing.T) {
	t.Parallel()
	credentials := &probing.BasicAuth{Username: "u", Password: "s3cret"}
	for name, tc := range map[string]struct {
		url, noProxy string
		credentials  *probing.BasicAuth
		want         string
	}{
		"no-proxy without proxy":     {noProxy: "internal", want: "--no-proxy needs --proxy-url"},
		"credentials without proxy":  {credentials: credentials, want: "--proxy-credentials-dir needs --proxy-url"},
		"socks":                      {url: "socks5://p:1080", want: "unsupported scheme"},
		"path":                       {url: "http://p:3128/x", want: "no path"},
		"bad CIDR":                   {url: "http://p:3128", noProxy: "10.0.0.0/33", want: "--no-proxy"},
		"control character":          {url: "http://user:s3cret@p:3128/\x01", want: "invalid control character"},
		"credentials in the URL":     {url: "http://user:s3cret@p:3128", want: "--proxy-url must not hold credentials"},
		"a user name in the URL":     {url: "http://s3cret@p:3128", want: "give them with --proxy-credentials-dir"},
		"credentials in both places": {url: "http://user:s3cret@p:3128", credentials: credentials, want: "--proxy-url must not hold credentials"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := checkspec.ParseDefaultProxy(tc.url, tc.noProxy, tc.credentials)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cret", "the error shows the password")
		})
	}
	fromSecret, err := checkspec.ParseDefaultProxy("http://proxy:3128\n", "", credentials)
	require.NoError(t, err, "a trailing line break (a Secret file) is ignored")
	assert.Equal(t, "http://proxy:3128", fromSecret.String(), "no credentials in logs")
	assert.Equal(t, &probing.Proxy{URL: "http://proxy:3128", Username: "u", Password: "s3cret"}, fromSecret.For("https://example.com"))
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", fromSecret, fromSecret.For("https://example.com"), fromSecret.For("https://example.com")), "s3cret")
	none, err := checkspec.ParseDefaultProxy("", "", nil)
	require.NoError(t, err)
	assert.Nil(t, none.For("https://example.com"))
	assert.Equal(t, "none", none.String())
}
