package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

// writeCredentials writes the files of a mounted kubernetes.io/basic-auth
// Secret into a new directory and returns it.
func writeCredentials(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	return dir
}

// TestProxyCredentialsFromFiles: the manager's default proxy takes its
// credentials from --proxy-credentials-dir and authenticates with them to
// a proxy that demands them; the command line holds no password.
func TestProxyCredentialsFromFiles(t *testing.T) {
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{Username: "probe", Password: "pr0xy-s3cret"})
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(target.Close)
	args := []string{
		"--proxy-url=" + proxy.URL(),
		"--proxy-credentials-dir=" + writeCredentials(t, map[string]string{"username": "probe", "password": "pr0xy-s3cret\n"}),
	}
	for _, arg := range args {
		assert.NotContains(t, arg, "pr0xy-s3cret", "the command line holds the password")
	}
	opts := defaultOptions()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts.bindFlags(fs)
	require.NoError(t, fs.Parse(args))
	require.NoError(t, opts.validate())

	def, err := opts.defaultProxy()
	require.NoError(t, err)
	assert.NotContains(t, fmt.Sprintf("%v %+v", def, def.For(target.URL)), "pr0xy-s3cret")
	loopback, err := egress.ParseCIDRs([]string{"127.0.0.0/8", "::1/128"})
	require.NoError(t, err)
	prober := probing.NewHTTPProber(probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{Allow: loopback})})
	t.Cleanup(prober.CloseIdleConnections)
	res := prober.Probe(t.Context(), mustTarget(t, probing.TargetSpec{URL: target.URL + "/", Method: http.MethodGet, Timeout: 10 * time.Second, Proxy: def.For(target.URL)}))
	require.True(t, res.Success, "%+v", res)
	assert.Equal(t, []string{target.URL + "/"}, proxy.ForwardedURLs(), "the request went through the proxy")

	// The same proxy without the credentials refuses the probe (407).
	opts.proxyCredentialsDir = ""
	def, err = opts.defaultProxy()
	require.NoError(t, err)
	res = prober.Probe(t.Context(), mustTarget(t, probing.TargetSpec{URL: target.URL + "/", Method: http.MethodGet, Timeout: 10 * time.Second, Proxy: def.For(target.URL)}))
	assert.Equal(t, probing.ReasonProxyFailed, res.Reason, "%+v", res)
}

// TestProxyCredentialsRefused: credentials on the command line are
// refused with the flag to use instead, and unusable files are refused
// with their path; no error quotes a password.
func TestProxyCredentialsRefused(t *testing.T) {
	tests := map[string]struct {
		proxyURL string
		files    map[string]string // nil: no directory
		want     string
	}{
		"credentials in --proxy-url": {proxyURL: "http://probe:pr0xy-s3cret@127.0.0.1:3128", want: "--proxy-url must not hold credentials"},
		"no --proxy-url":             {files: map[string]string{"username": "probe", "password": "pr0xy-s3cret"}, want: "--proxy-credentials-dir needs --proxy-url"},
		"no username file":           {proxyURL: "http://127.0.0.1:3128", files: map[string]string{"password": "pr0xy-s3cret"}, want: "username: no such file"},
		"no password file":           {proxyURL: "http://127.0.0.1:3128", files: map[string]string{"username": "probe"}, want: "password: no such file"},
		"empty username":             {proxyURL: "http://127.0.0.1:3128", files: map[string]string{"username": "\n", "password": "pr0xy-s3cret"}, want: "username is empty"},
		"colon in the username":      {proxyURL: "http://127.0.0.1:3128", files: map[string]string{"username": "probe:pr0xy-s3cret", "password": "x"}, want: "holds a colon"},
		"two lines":                  {proxyURL: "http://127.0.0.1:3128", files: map[string]string{"username": "probe", "password": "pr0xy-s3cret\nmore\n"}, want: "password holds a line break"},
		"too large":                  {proxyURL: "http://127.0.0.1:3128", files: map[string]string{"username": "probe", "password": "pr0xy-s3cret" + strings.Repeat("x", maxProxyCredentialBytes)}, want: "larger than 4096 bytes"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := defaultOptions()
			opts.proxyURL = tc.proxyURL
			if tc.files != nil {
				opts.proxyCredentialsDir = writeCredentials(t, tc.files)
			}
			_, err := opts.defaultProxy()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "pr0xy-s3cret", "the error quotes the password")
			verr := opts.validate()
			require.Error(t, verr, "the manager does not start")
			assert.NotContains(t, verr.Error(), "pr0xy-s3cret")
		})
	}
}

// TestProxyCredentialsTrimmed: one trailing line break (LF or CRLF) of
// each file is not part of the credential; other spaces are.
func TestProxyCredentialsTrimmed(t *testing.T) {
	creds, err := readProxyCredentials(writeCredentials(t, map[string]string{"username": "probe\r\n", "password": " pass word \n"}))
	require.NoError(t, err)
	assert.Equal(t, "probe", creds.Username.Reveal())
	assert.Equal(t, " pass word ", creds.Password.Reveal())
}

// mustTarget builds spec, failing the test when NewTarget refuses it.
func mustTarget(t *testing.T, spec probing.TargetSpec) probing.Target {
	t.Helper()
	target, err := probing.NewTarget(spec)
	require.NoError(t, err)
	return target
}
