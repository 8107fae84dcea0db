package probing_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
)

func TestTargetValidate(t *testing.T) {
	t.Parallel()
	// valid returns a resolved target changed by mutate.
	valid := func(mutate func(*probing.Target)) probing.Target {
		target := probing.Target{URL: "http://127.0.0.1:8080/healthz", Method: "GET", Timeout: time.Second}
		if mutate != nil {
			mutate(&target)
		}
		return target
	}
	bodyMatch := func(maxBytes int64) func(*probing.Target) {
		return func(t *probing.Target) {
			t.BodyMatch = &probing.BodyMatch{Regexp: pattern.MustCompile("ok"), MaxBytes: maxBytes}
		}
	}

	tests := map[string]struct {
		target  probing.Target
		wantErr string // contained in the error; empty means valid
	}{
		"minimal": {target: valid(nil)},
		"HEAD":    {target: valid(func(t *probing.Target) { t.Method = "HEAD" })},
		"POST":    {target: valid(func(t *probing.Target) { t.Method = "POST" })},
		"PUT":     {target: valid(func(t *probing.Target) { t.Method = "PUT" })},
		"OPTIONS": {target: valid(func(t *probing.Target) { t.Method = "OPTIONS" })},
		"https":   {target: valid(func(t *probing.Target) { t.URL = "https://[::1]/" })},
		"everything": {target: valid(func(t *probing.Target) {
			t.ExpectedStatusCodes, t.IPFamily, t.BodyMatch = []int{100, 599}, probing.IPFamilyIPv6, &probing.BodyMatch{Regexp: pattern.MustCompile("x"), MaxBytes: 1}
		})},
		"largest body match": {target: valid(bodyMatch(probing.MaxBodyMatchBytes))},

		"empty URL":          {target: valid(func(t *probing.Target) { t.URL = "" }), wantErr: "empty URL"},
		"unsupported scheme": {target: valid(func(t *probing.Target) { t.URL = "ftp://127.0.0.1/" }), wantErr: `unsupported scheme "ftp"`},
		"no scheme":          {target: valid(func(t *probing.Target) { t.URL = "127.0.0.1:8080/" }), wantErr: "invalid target: URL"},
		"no host":            {target: valid(func(t *probing.Target) { t.URL = "http:///path" }), wantErr: "missing host"},
		"unparseable":        {target: valid(func(t *probing.Target) { t.URL = "http://[::1" }), wantErr: "invalid target: URL"},
		"control character":  {target: valid(func(t *probing.Target) { t.URL = "http://127.0.0.1/\x00" }), wantErr: "invalid control character"},
		"bad port":           {target: valid(func(t *probing.Target) { t.URL = "http://127.0.0.1:port/" }), wantErr: "invalid port"},
		"password not shown": {target: valid(func(t *probing.Target) { t.URL = "http://user:secret@127.0.0.1:badport/" }), wantErr: "invalid port"},
		"no method":          {target: valid(func(t *probing.Target) { t.Method = "" }), wantErr: "missing method"},
		"lower case method":  {target: valid(func(t *probing.Target) { t.Method = "get" }), wantErr: `unsupported method "get"`},
		"TRACE":              {target: valid(func(t *probing.Target) { t.Method = "TRACE" }), wantErr: `unsupported method "TRACE"`},
		"malformed method":   {target: valid(func(t *probing.Target) { t.Method = "GE T" }), wantErr: "unsupported method"},
		"zero timeout":       {target: valid(func(t *probing.Target) { t.Timeout = 0 }), wantErr: "timeout 0s is not positive"},
		"negative timeout":   {target: valid(func(t *probing.Target) { t.Timeout = -time.Second }), wantErr: "timeout -1s is not positive"},
		"status code 99":     {target: valid(func(t *probing.Target) { t.ExpectedStatusCodes = []int{200, 99} }), wantErr: "status code 99 is not between 100 and 599"},
		"status code 600":    {target: valid(func(t *probing.Target) { t.ExpectedStatusCodes = []int{600} }), wantErr: "status code 600"},
		"unknown IP family":  {target: valid(func(t *probing.Target) { t.IPFamily = "IPv5" }), wantErr: `unknown IP family "IPv5"`},
		"body match without regexp": {
			target: valid(func(t *probing.Target) { t.BodyMatch = &probing.BodyMatch{MaxBytes: 1} }), wantErr: "without a regular expression",
		},
		"body match limit unresolved": {target: valid(bodyMatch(0)), wantErr: "maxBodyBytes 0 is not between 1 and 1048576"},
		"body match limit too large":  {target: valid(bodyMatch(probing.MaxBodyMatchBytes + 1)), wantErr: "maxBodyBytes 1048577"},
		"body match limit negative":   {target: valid(bodyMatch(-1)), wantErr: "maxBodyBytes -1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := tc.target.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "invalid target"), err.Error())
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

func TestNewBodyMatch(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		pattern  string
		maxBytes int64
		wantErr  string // contained in the error; empty means valid
	}{
		"smallest limit":   {pattern: "ok", maxBytes: 1},
		"largest limit":    {pattern: "ok", maxBytes: probing.MaxBodyMatchBytes},
		"unresolved limit": {pattern: "ok", maxBytes: 0, wantErr: "maxBodyBytes 0 is not between 1 and 1048576"},
		"limit too large":  {pattern: "ok", maxBytes: probing.MaxBodyMatchBytes + 1, wantErr: "not between 1 and"},
		"empty pattern":    {pattern: "", maxBytes: 1, wantErr: "empty regular expression"},
		"pattern too long": {pattern: strings.Repeat("x", probing.MaxBodyMatchPattern+1), maxBytes: 1, wantErr: "longer than 1024 bytes"},
		"not RE2":          {pattern: "(?=ok)", maxBytes: 1, wantErr: "invalid or unsupported Perl syntax"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := probing.NewBodyMatch(tc.pattern, true, tc.maxBytes)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.pattern, m.Regexp.String())
			assert.True(t, m.Invert)
			assert.Equal(t, tc.maxBytes, m.MaxBytes)
		})
	}
}

func TestSecretNeverFormats(t *testing.T) {
	target := probing.Target{
		URL:         "http://127.0.0.1/",
		Headers:     []probing.Header{{Name: "X-Api-Key", Value: "hunter2-header", Sensitive: true}},
		BasicAuth:   &probing.BasicAuth{Username: "hunter2-user", Password: "hunter2-password"},
		BearerToken: "hunter2-token",
	}
	js, err := json.Marshal(target)
	require.NoError(t, err)
	for _, out := range []string{
		fmt.Sprintf("%v", target), fmt.Sprintf("%+v", target), fmt.Sprintf("%#v", target), fmt.Sprintf("%s", target.BearerToken),
		fmt.Sprintf("%q", target.BearerToken), fmt.Sprintf("%x", target.BearerToken), fmt.Sprint(*target.BasicAuth), string(js),
	} {
		assert.NotContains(t, out, "hunter2", out)
	}
	assert.Contains(t, string(js), "[redacted]")
	assert.Equal(t, "hunter2-token", target.BearerToken.Reveal())
}

func TestTargetEqual(t *testing.T) {
	base := func() probing.Target {
		return probing.Target{
			URL: "https://127.0.0.1/", Method: "POST", Timeout: time.Second, Body: "b",
			Headers:   []probing.Header{{Name: "A", Value: "1"}},
			BodyMatch: &probing.BodyMatch{Regexp: pattern.MustCompile("ok"), MaxBytes: 10},
			BasicAuth: &probing.BasicAuth{Username: "u", Password: "p"},
			TLS:       probing.TLSOptions{RootCAs: []byte("ca"), ServerName: "s", MinVersion: tls.VersionTLS13},
			IPFamily:  probing.IPFamilyIPv6, CertExpiryWarning: time.Hour,
		}
	}
	assert.True(t, base().Equal(base()), "equal when built twice (regexps compiled apart)")
	for name, mutate := range map[string]func(*probing.Target){
		"header value":  func(t *probing.Target) { t.Headers[0].Value = "2" },
		"body":          func(t *probing.Target) { t.Body = "c" },
		"regexp":        func(t *probing.Target) { t.BodyMatch.Regexp = pattern.MustCompile("ko") },
		"no body match": func(t *probing.Target) { t.BodyMatch = nil },
		"invert":        func(t *probing.Target) { t.BodyMatch.Invert = true },
		"password":      func(t *probing.Target) { t.BasicAuth.Password = "q" },
		"bearer":        func(t *probing.Target) { t.BearerToken = "x" },
		"CA":            func(t *probing.Target) { t.TLS.RootCAs = []byte("other") },
		"insecure":      func(t *probing.Target) { t.TLS.InsecureSkipVerify = true },
		"warning":       func(t *probing.Target) { t.CertExpiryWarning = 0 },
		"family":        func(t *probing.Target) { t.IPFamily = probing.IPFamilyAny },
		"reuse":         func(t *probing.Target) { t.ReuseConnections = true },
	} {
		changed := base()
		mutate(&changed)
		assert.False(t, base().Equal(changed), name)
	}
}
