package probing_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
	"github.com/networkio/webchecker/probing/probetest"
)

func TestNewTarget(t *testing.T) {
	t.Parallel()
	// valid returns a resolved target changed by mutate.
	valid := func(mutate func(*probing.TargetSpec)) probing.TargetSpec {
		target := probing.TargetSpec{URL: "http://127.0.0.1:8080/healthz", Method: "GET", Timeout: time.Second}
		if mutate != nil {
			mutate(&target)
		}
		return target
	}
	bodyMatch := func(maxBytes int64) func(*probing.TargetSpec) {
		return func(t *probing.TargetSpec) {
			t.BodyMatch = &probing.BodyMatch{Regexp: pattern.MustCompile("ok"), MaxBytes: maxBytes}
		}
	}

	tests := map[string]struct {
		target  probing.TargetSpec
		wantErr string // contained in the error; empty means valid
	}{
		"minimal": {target: valid(nil)},
		"HEAD":    {target: valid(func(t *probing.TargetSpec) { t.Method = "HEAD" })},
		"POST":    {target: valid(func(t *probing.TargetSpec) { t.Method = "POST" })},
		"PUT":     {target: valid(func(t *probing.TargetSpec) { t.Method = "PUT" })},
		"OPTIONS": {target: valid(func(t *probing.TargetSpec) { t.Method = "OPTIONS" })},
		"https":   {target: valid(func(t *probing.TargetSpec) { t.URL = "https://[::1]/" })},
		"everything": {target: valid(func(t *probing.TargetSpec) {
			t.ExpectedStatusCodes, t.IPFamily, t.BodyMatch = []int{100, 599}, probing.IPFamilyIPv6, &probing.BodyMatch{Regexp: pattern.MustCompile("x"), MaxBytes: 1}
		})},
		"largest body match": {target: valid(bodyMatch(probing.MaxBodyMatchBytes))},

		"empty URL":          {target: valid(func(t *probing.TargetSpec) { t.URL = "" }), wantErr: "empty URL"},
		"unsupported scheme": {target: valid(func(t *probing.TargetSpec) { t.URL = "ftp://127.0.0.1/" }), wantErr: `unsupported scheme "ftp"`},
		"no scheme":          {target: valid(func(t *probing.TargetSpec) { t.URL = "127.0.0.1:8080/" }), wantErr: "invalid target: URL"},
		"no host":            {target: valid(func(t *probing.TargetSpec) { t.URL = "http:///path" }), wantErr: "missing host"},
		"unparseable":        {target: valid(func(t *probing.TargetSpec) { t.URL = "http://[::1" }), wantErr: "invalid target: URL"},
		"control character":  {target: valid(func(t *probing.TargetSpec) { t.URL = "http://127.0.0.1/\x00" }), wantErr: "invalid control character"},
		"bad port":           {target: valid(func(t *probing.TargetSpec) { t.URL = "http://127.0.0.1:port/" }), wantErr: "invalid port"},
		"password not shown": {target: valid(func(t *probing.TargetSpec) { t.URL = "http://user:secret@127.0.0.1:badport/" }), wantErr: "invalid port"},
		"no method":          {target: valid(func(t *probing.TargetSpec) { t.Method = "" }), wantErr: "missing method"},
		"lower case method":  {target: valid(func(t *probing.TargetSpec) { t.Method = "get" }), wantErr: `unsupported method "get"`},
		"TRACE":              {target: valid(func(t *probing.TargetSpec) { t.Method = "TRACE" }), wantErr: `unsupported method "TRACE"`},
		"malformed method":   {target: valid(func(t *probing.TargetSpec) { t.Method = "GE T" }), wantErr: "unsupported method"},
		"zero timeout":       {target: valid(func(t *probing.TargetSpec) { t.Timeout = 0 }), wantErr: "timeout 0s is not positive"},
		"negative timeout":   {target: valid(func(t *probing.TargetSpec) { t.Timeout = -time.Second }), wantErr: "timeout -1s is not positive"},
		"status code 99":     {target: valid(func(t *probing.TargetSpec) { t.ExpectedStatusCodes = []int{200, 99} }), wantErr: "status code 99 is not between 100 and 599"},
		"status code 600":    {target: valid(func(t *probing.TargetSpec) { t.ExpectedStatusCodes = []int{600} }), wantErr: "status code 600"},
		"unknown IP family":  {target: valid(func(t *probing.TargetSpec) { t.IPFamily = "IPv5" }), wantErr: `unknown IP family "IPv5"`},
		"body match without regexp": {
			target: valid(func(t *probing.TargetSpec) { t.BodyMatch = &probing.BodyMatch{MaxBytes: 1} }), wantErr: "without a regular expression",
		},
		"body match limit unresolved": {target: valid(bodyMatch(0)), wantErr: "maxBodyBytes 0 is not between 1 and 1048576"},
		"body match limit too large":  {target: valid(bodyMatch(probing.MaxBodyMatchBytes + 1)), wantErr: "maxBodyBytes 1048577"},
		"body match limit negative":   {target: valid(bodyMatch(-1)), wantErr: "maxBodyBytes -1"},
		"empty body match": {
			target: valid(func(t *probing.TargetSpec) {
				t.BodyMatch = &probing.BodyMatch{Regexp: pattern.MustCompile(""), MaxBytes: 1}
			}), wantErr: "empty regular expression",
		},
		"CA bundle without a certificate": {
			target: valid(func(t *probing.TargetSpec) { t.URL, t.TLS.RootCAs = "https://127.0.0.1/", []byte("not PEM") }), wantErr: "holds no PEM-encoded certificate",
		},
		"dns name not a domain name": {
			target: probing.TargetSpec{URL: "dns://127.0.0.1", Timeout: time.Second,
				DNS: &probing.DNSOptions{Name: strings.Repeat("a", 64) + ".test", Type: "A", Transport: "udp"}},
			wantErr: "dns: name",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			target, err := probing.NewTarget(tc.target)
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, probing.KindHTTP, target.Kind())
				return
			}
			require.Error(t, err)
			assert.Zero(t, target)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "invalid target"), err.Error())
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

func TestSecretNeverFormats(t *testing.T) {
	target := probing.TargetSpec{
		URL:         "http://127.0.0.1/",
		Headers:     []probing.Header{{Name: "X-Api-Key", Value: "hunter2-header", Sensitive: true}},
		BasicAuth:   &probing.BasicAuth{Username: "hunter2-user", Password: "hunter2-password"},
		BearerToken: "hunter2-token",
	}
	js, err := json.Marshal(target)
	require.NoError(t, err)
	target.Method, target.Timeout = "GET", time.Second
	built := mustTarget(t, target)
	for _, out := range []string{
		fmt.Sprintf("%v", target), fmt.Sprintf("%+v", target), fmt.Sprintf("%#v", target), fmt.Sprintf("%s", target.BearerToken),
		fmt.Sprintf("%v", built), fmt.Sprintf("%+v", built), fmt.Sprintf("%#v", built), fmt.Sprintf("%+v", built.Spec()),
		fmt.Sprintf("%q", target.BearerToken), fmt.Sprintf("%x", target.BearerToken), fmt.Sprint(*target.BasicAuth), string(js),
	} {
		assert.NotContains(t, out, "hunter2", out)
	}
	assert.Contains(t, string(js), "[redacted]")
	assert.Equal(t, "hunter2-token", target.BearerToken.Reveal())
}

func TestTargetEqual(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	ca := probetest.NewCertificate(t, "ca.test", time.Now().Add(-day), time.Now().Add(day)).PEM
	other := probetest.NewCertificate(t, "other.test", time.Now().Add(-day), time.Now().Add(day)).PEM
	base := func() probing.TargetSpec {
		return probing.TargetSpec{
			URL: "https://127.0.0.1/", Method: "POST", Timeout: time.Second, Body: "b",
			ExpectedStatusCodes: []int{204, 200},
			Headers:             []probing.Header{{Name: "A", Value: "1"}},
			BodyMatch:           &probing.BodyMatch{Regexp: pattern.MustCompile("ok"), MaxBytes: 10},
			BasicAuth:           &probing.BasicAuth{Username: "u", Password: "p"},
			TLS:                 probing.TLSOptions{RootCAs: ca, ServerName: "s", MinVersion: tls.VersionTLS13},
			IPFamily:            probing.IPFamilyIPv6, CertExpiryWarning: time.Hour,
		}
	}
	assert.True(t, mustTarget(t, base()).Equal(mustTarget(t, base())), "equal when built twice (regexps compiled apart)")
	reordered := base()
	reordered.ExpectedStatusCodes = []int{200, 204, 200}
	assert.True(t, mustTarget(t, base()).Equal(mustTarget(t, reordered)), "the status codes are a set")
	assert.True(t, probing.Target{}.Equal(probing.Target{}))
	assert.False(t, probing.Target{}.Equal(mustTarget(t, base())))
	for name, mutate := range map[string]func(*probing.TargetSpec){
		"header value":  func(t *probing.TargetSpec) { t.Headers[0].Value = "2" },
		"body":          func(t *probing.TargetSpec) { t.Body = "c" },
		"status codes":  func(t *probing.TargetSpec) { t.ExpectedStatusCodes = []int{200} },
		"regexp":        func(t *probing.TargetSpec) { t.BodyMatch.Regexp = pattern.MustCompile("ko") },
		"no body match": func(t *probing.TargetSpec) { t.BodyMatch = nil },
		"invert":        func(t *probing.TargetSpec) { t.BodyMatch.Invert = true },
		"password":      func(t *probing.TargetSpec) { t.BasicAuth.Password = "q" },
		"bearer":        func(t *probing.TargetSpec) { t.BearerToken = "x" },
		"CA":            func(t *probing.TargetSpec) { t.TLS.RootCAs = other },
		"insecure":      func(t *probing.TargetSpec) { t.TLS.InsecureSkipVerify = true },
		"warning":       func(t *probing.TargetSpec) { t.CertExpiryWarning = 0 },
		"family":        func(t *probing.TargetSpec) { t.IPFamily = probing.IPFamilyAny },
		"reuse":         func(t *probing.TargetSpec) { t.ReuseConnections = true },
		"DNS server":    func(t *probing.TargetSpec) { t.DNSServer = "127.0.0.1:53" },
	} {
		changed := base()
		mutate(&changed)
		assert.False(t, mustTarget(t, base()).Equal(mustTarget(t, changed)), name)
	}
}

// TestTargetIsImmutable: a Target keeps what NewTarget was given, whatever
// the caller does with its spec afterwards, or with the copy Spec returns.
func TestTargetIsImmutable(t *testing.T) {
	t.Parallel()
	spec := probing.TargetSpec{
		URL: "http://127.0.0.1/", Method: "GET", Timeout: time.Second,
		ExpectedStatusCodes: []int{204, 200},
		Headers:             []probing.Header{{Name: "A", Value: "1"}},
		BasicAuth:           &probing.BasicAuth{Username: "u", Password: "p"},
		EgressAllow:         []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	}
	target := mustTarget(t, spec)
	want := mustTarget(t, spec)
	spec.ExpectedStatusCodes[0], spec.Headers[0].Value, spec.BasicAuth.Password = 500, "2", "q"
	spec.EgressAllow[0] = netip.MustParsePrefix("0.0.0.0/0")
	assert.True(t, target.Equal(want), "changed by its spec")

	got := target.Spec()
	assert.Equal(t, []int{200, 204}, got.ExpectedStatusCodes, "sorted")
	got.ExpectedStatusCodes[0], got.Headers[0].Value, got.BasicAuth.Password = 500, "3", "r"
	got.EgressAllow[0] = netip.MustParsePrefix("0.0.0.0/0")
	assert.True(t, target.Equal(want), "changed by its Spec")
	assert.True(t, target.Accepts(200))
	assert.False(t, target.Accepts(500))
}

// TestTargetKnowsItsKind: the URL's scheme chooses the Kind, and whether
// the probe speaks TLS.
func TestTargetKnowsItsKind(t *testing.T) {
	t.Parallel()
	dns := &probing.DNSOptions{Name: "a.test", Type: "A", Transport: "udp"}
	tests := map[string]struct {
		spec    probing.TargetSpec
		kind    probing.Kind
		usesTLS bool
	}{
		"http":  {spec: probing.TargetSpec{URL: "http://127.0.0.1/", Method: "GET"}, kind: probing.KindHTTP},
		"https": {spec: probing.TargetSpec{URL: "HTTPS://127.0.0.1/", Method: "GET"}, kind: probing.KindHTTP, usesTLS: true},
		"tcp":   {spec: probing.TargetSpec{URL: "tcp://127.0.0.1:5432"}, kind: probing.KindTCP},
		"tls":   {spec: probing.TargetSpec{URL: "tls://127.0.0.1:443"}, kind: probing.KindTLS, usesTLS: true},
		"grpc":  {spec: probing.TargetSpec{URL: "grpc://127.0.0.1:9000"}, kind: probing.KindGRPC},
		"grpcs": {spec: probing.TargetSpec{URL: "grpcs://127.0.0.1:9000"}, kind: probing.KindGRPC, usesTLS: true},
		"dns":   {spec: probing.TargetSpec{URL: "dns://127.0.0.1", DNS: dns}, kind: probing.KindDNS},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.spec.Timeout, tc.spec.CertExpiryWarning = time.Second, time.Hour
			target := mustTarget(t, tc.spec)
			assert.Equal(t, tc.kind, target.Kind())
			assert.Equal(t, tc.usesTLS, target.UsesTLS())
			assert.Equal(t, tc.spec.URL, target.URL())
			assert.Equal(t, time.Hour, target.CertExpiryWarning())
		})
	}
	var zero probing.Target
	assert.Empty(t, zero.Kind())
	assert.False(t, zero.UsesTLS())
	assert.Empty(t, zero.URL())
	assert.Zero(t, zero.Spec())
}

// TestUnbuiltTargetIsNotProbed: the zero Target, which NewTarget did not
// build, is an invalid target for every prober, never a panic.
func TestUnbuiltTargetIsNotProbed(t *testing.T) {
	t.Parallel()
	opts := probing.ProberOptions{}
	for name, p := range map[string]probing.Prober{
		"kinds": probing.NewProber(opts), "http": probing.NewHTTPProber(opts), "tcp": probing.NewTCPProber(opts),
		"grpc": probing.NewGRPCProber(opts), "dns": probing.NewDNSProber(opts),
	} {
		var res probing.Result
		require.NotPanics(t, func() { res = p.Probe(t.Context(), probing.Target{}) }, name)
		assert.Equal(t, probing.ReasonInvalidTarget, res.Reason, name)
		assert.Equal(t, "invalid target: not built with NewTarget", res.Message, name)
		assert.False(t, res.Success, name)
	}
}
