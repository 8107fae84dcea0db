package probing_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
	"github.com/networkio/webchecker/probing/probetest"
)

func TestHTTPProberRequestOptions(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})

	tests := map[string]struct {
		target     probing.TargetSpec
		wantMethod string
		wantHost   string
		wantHeader map[string]string
		wantBody   string
	}{
		"POST with a body and headers": {
			target: probing.TargetSpec{Method: "POST", Body: `{"ping":1}`, Headers: []probing.Header{
				{Name: "content-type", Value: "application/json"},
				{Name: "X-Api-Key", Value: "k3y", Sensitive: true},
			}},
			wantMethod: "POST",
			wantHeader: map[string]string{"Content-Type": "application/json", "X-Api-Key": "k3y", "Content-Length": "10", "User-Agent": "webchecker"},
			wantBody:   `{"ping":1}`,
		},
		"PUT":     {target: probing.TargetSpec{Method: "PUT", Body: "x"}, wantMethod: "PUT", wantBody: "x"},
		"OPTIONS": {target: probing.TargetSpec{Method: "OPTIONS"}, wantMethod: "OPTIONS"},
		"user agent overridden": {
			target:     probing.TargetSpec{Method: "GET", Headers: []probing.Header{{Name: "User-Agent", Value: "probe/2"}}},
			wantMethod: "GET",
			wantHeader: map[string]string{"User-Agent": "probe/2"},
		},
		"Host header": {
			target:     probing.TargetSpec{Method: "GET", Headers: []probing.Header{{Name: "host", Value: "vhost.example"}}},
			wantMethod: "GET",
			wantHost:   "vhost.example",
		},
		"basic auth": {
			target:     probing.TargetSpec{Method: "GET", BasicAuth: &probing.BasicAuth{Username: "alice", Password: "s3cret"}},
			wantMethod: "GET",
			wantHeader: map[string]string{"Authorization": "Basic YWxpY2U6czNjcmV0"},
		},
		"bearer token": {
			target:     probing.TargetSpec{Method: "GET", BearerToken: "t0ken"},
			wantMethod: "GET",
			wantHeader: map[string]string{"Authorization": "Bearer t0ken"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, rec := recordingServer(t)
			tc.target.URL, tc.target.Timeout = srv.URL+"/", relaxedTimeout
			res := probe(t.Context(), prober, tc.target)
			require.True(t, res.Success, "%+v", res)
			method, host, header, body := rec.get()
			assert.Equal(t, tc.wantMethod, method)
			assert.Equal(t, tc.wantBody, body)
			if tc.wantHost == "" {
				tc.wantHost = srv.Listener.Addr().String()
			}
			assert.Equal(t, tc.wantHost, host)
			for k, v := range tc.wantHeader {
				assert.Equal(t, v, header.Get(k), k)
			}
			assert.Nil(t, res.CertificateExpiry, "no TLS, no certificate")
		})
	}
}

func TestHTTPProberRedirectKeepsSecretHeadersOnTheirHost(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	other, otherSeen := recordingServer(t)
	same, sameSeen := recordingServer(t)
	origin := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		default:
			http.Redirect(w, r, "/same", http.StatusFound)
		}
	}))
	sameOrigin := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			same.Config.Handler.ServeHTTP(w, r)
			return
		}
		http.Redirect(w, r, "/same", http.StatusFound)
	}))
	headers := []probing.Header{{Name: "X-Api-Key", Value: "k3y", Sensitive: true}, {Name: "X-Plain", Value: "visible"}}

	res := probe(t.Context(), prober, probing.TargetSpec{URL: origin.URL + "/away", Method: http.MethodGet, Timeout: relaxedTimeout, FollowRedirects: true, Headers: headers, BearerToken: "t0ken"})
	require.True(t, res.Success, "%+v", res)
	_, _, header, _ := otherSeen.get()
	assert.Empty(t, header.Get("X-Api-Key"), "a header from a Secret followed a redirect to another host")
	assert.Empty(t, header.Get("Authorization"), "credentials followed a redirect to another host")
	assert.Equal(t, "visible", header.Get("X-Plain"))

	res = probe(t.Context(), prober, probing.TargetSpec{URL: sameOrigin.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout, FollowRedirects: true, Headers: headers})
	require.True(t, res.Success, "%+v", res)
	_, _, header, _ = sameSeen.get()
	assert.Equal(t, "k3y", header.Get("X-Api-Key"), "a redirect on the same host keeps the header")
}

func TestHTTPProberBodyMatch(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	// 100 bytes of padding, then the status.
	body := strings.Repeat(".", 100) + `{"status": "degraded", "secret": "do-not-show"}`
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body)
	}))

	tests := map[string]struct {
		match       probing.BodyMatch
		wantReason  probing.Reason
		wantMessage string
	}{
		"matches":               {probing.BodyMatch{Regexp: pattern.MustCompile(`"status":\s*"degraded"`), MaxBytes: 1 << 10}, probing.ReasonSucceeded, probing.ReadyMessage},
		"does not match":        {probing.BodyMatch{Regexp: pattern.MustCompile(`"status":\s*"ok"`), MaxBytes: 1 << 10}, probing.ReasonBodyMismatch, `response body does not match "\"status\":\\s*\"ok\""`},
		"inverted, not matched": {probing.BodyMatch{Regexp: pattern.MustCompile(`error`), Invert: true, MaxBytes: 1 << 10}, probing.ReasonSucceeded, probing.ReadyMessage},
		"inverted, matched":     {probing.BodyMatch{Regexp: pattern.MustCompile(`degraded`), Invert: true, MaxBytes: 1 << 10}, probing.ReasonBodyMismatch, `response body matches "degraded", which it must not`},
		"beyond maxBytes":       {probing.BodyMatch{Regexp: pattern.MustCompile(`status`), MaxBytes: 100}, probing.ReasonBodyMismatch, `response body does not match "status"`},
		"within maxBytes":       {probing.BodyMatch{Regexp: pattern.MustCompile(`^\.{100}\{`), MaxBytes: 101}, probing.ReasonSucceeded, probing.ReadyMessage},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := probe(t.Context(), prober, probing.TargetSpec{URL: srv.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout, BodyMatch: &tc.match})
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			assert.Equal(t, tc.wantReason == probing.ReasonSucceeded, res.Success)
			assert.Equal(t, tc.wantMessage, res.Message)
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.NotContains(t, res.Message, "do-not-show", "the body never shows in a message")
		})
	}

	// A status code failure comes first.
	res := probe(t.Context(), prober, probing.TargetSpec{URL: srv.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout, ExpectedStatusCodes: []int{204},
		BodyMatch: &probing.BodyMatch{Regexp: pattern.MustCompile(`nope`), MaxBytes: 1 << 10}})
	assert.Equal(t, probing.ReasonUnexpectedStatus, res.Reason)
}

func TestHTTPProberTLSOptions(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	srv := startTLSServer(t, nil, 0)
	tls12 := startTLSServer(t, nil, tls.VersionTLS12)
	ca := serverCA(srv)
	tls11 := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tls11.Config.ErrorLog = log.New(io.Discard, "", 0)
	tls11.TLS = &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	tls11.StartTLS()
	t.Cleanup(tls11.Close)
	other := probetest.NewCertificate(t, "other.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))

	tests := map[string]struct {
		url         string
		tls         probing.TLSOptions
		wantReason  probing.Reason
		wantContain string
	}{
		"CA given":                  {srv.URL, probing.TLSOptions{RootCAs: ca}, probing.ReasonSucceeded, ""},
		"no CA: self-signed fails":  {srv.URL, probing.TLSOptions{}, probing.ReasonTLSError, "certificate signed by unknown authority"},
		"another CA fails":          {srv.URL, probing.TLSOptions{RootCAs: other.PEM}, probing.ReasonTLSError, "certificate signed by unknown authority"},
		"insecureSkipVerify":        {srv.URL, probing.TLSOptions{InsecureSkipVerify: true}, probing.ReasonSucceeded, ""},
		"serverName in certificate": {srv.URL, probing.TLSOptions{RootCAs: ca, ServerName: "example.com"}, probing.ReasonSucceeded, ""},
		"serverName not in certificate": {
			srv.URL, probing.TLSOptions{RootCAs: ca, ServerName: "other.test"}, probing.ReasonTLSError, `not valid for "other.test"`,
		},
		"minVersion met":                    {tls12.URL, probing.TLSOptions{RootCAs: serverCA(tls12), MinVersion: tls.VersionTLS12}, probing.ReasonSucceeded, ""},
		"legacy server, default minVersion": {tls11.URL, probing.TLSOptions{RootCAs: ca}, probing.ReasonTLSError, "protocol version"},
		"legacy server, minVersion 1.0":     {tls11.URL, probing.TLSOptions{RootCAs: ca, MinVersion: tls.VersionTLS10}, probing.ReasonSucceeded, ""},
		"minVersion not met":                {tls12.URL, probing.TLSOptions{RootCAs: serverCA(tls12), MinVersion: tls.VersionTLS13}, probing.ReasonTLSError, "protocol version"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := probe(t.Context(), prober, probing.TargetSpec{URL: tc.url + "/", Method: http.MethodGet, Timeout: relaxedTimeout, TLS: tc.tls})
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			assert.Contains(t, res.Message, tc.wantContain)
			if res.Success {
				require.NotNil(t, res.CertificateExpiry)
				assert.True(t, res.CertificateExpiry.Equal(srv.Certificate().NotAfter), "expiry %s", res.CertificateExpiry)
			}
		})
	}
}

func TestHTTPProberCertificateExpiry(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	now := time.Now()
	soon := probetest.NewCertificate(t, "soon.test", now.Add(-time.Hour), now.Add(48*time.Hour).Truncate(time.Second))
	expired := probetest.NewCertificate(t, "expired.test", now.Add(-48*time.Hour), now.Add(-time.Hour).Truncate(time.Second))
	soonSrv := startTLSServer(t, &soon, 0)
	expiredSrv := startTLSServer(t, &expired, 0)
	const fortnight = 14 * 24 * time.Hour

	tests := map[string]struct {
		url         string
		tls         probing.TLSOptions
		warning     time.Duration
		wantReason  probing.Reason
		wantMessage string
		wantExpiry  time.Time
		// wantWarning is the CertificateWarning of a successful probe.
		wantWarning string
	}{
		"expires within the warning: a success with a warning": {soonSrv.URL, probing.TLSOptions{RootCAs: soon.PEM}, fortnight, probing.ReasonSucceeded, probing.ReadyMessage, soon.X509.NotAfter,
			fmt.Sprintf(`the server's certificate expires at %s, in less than 336h0m0s`, soon.X509.NotAfter.UTC().Format(time.RFC3339))},
		"expires after the warning": {soonSrv.URL, probing.TLSOptions{RootCAs: soon.PEM}, 24 * time.Hour, probing.ReasonSucceeded, probing.ReadyMessage, soon.X509.NotAfter, ""},
		"warning off":               {soonSrv.URL, probing.TLSOptions{RootCAs: soon.PEM}, 0, probing.ReasonSucceeded, probing.ReadyMessage, soon.X509.NotAfter, ""},
		"expired, verified":         {expiredSrv.URL, probing.TLSOptions{RootCAs: expired.PEM}, fortnight, probing.ReasonTLSError, "x509: the server's certificate expired at " + expired.X509.NotAfter.UTC().Format(time.RFC3339), expired.X509.NotAfter, ""},
		"expired, not verified: a success with a warning": {expiredSrv.URL, probing.TLSOptions{InsecureSkipVerify: true}, fortnight, probing.ReasonSucceeded, probing.ReadyMessage, expired.X509.NotAfter,
			fmt.Sprintf(`the server's certificate expired at %s`, expired.X509.NotAfter.UTC().Format(time.RFC3339))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			target := probing.TargetSpec{URL: tc.url + "/", Method: http.MethodGet, Timeout: relaxedTimeout, TLS: tc.tls, CertExpiryWarning: tc.warning}
			first := probe(t.Context(), prober, target)
			assert.Equal(t, tc.wantReason, first.Reason, "%+v", first)
			assert.Contains(t, first.Message, tc.wantMessage)
			assert.Equal(t, tc.wantWarning, first.CertificateWarning)
			assert.Equal(t, tc.wantReason == probing.ReasonSucceeded, first.Success)
			if tc.wantExpiry.IsZero() {
				assert.Nil(t, first.CertificateExpiry)
			} else {
				require.NotNil(t, first.CertificateExpiry)
				assert.True(t, first.CertificateExpiry.Equal(tc.wantExpiry))
				if first.Success {
					assert.Equal(t, http.StatusOK, first.StatusCode)
				}
			}
			second := probe(t.Context(), prober, target)
			assert.True(t, first.SameOutcome(second), "an unchanged certificate gives the same outcome:\n%+v\n%+v", first, second)
		})
	}
}

func TestHTTPProberIPFamily(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	srv := startServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) // 127.0.0.1 only
	url := byName(t, srv) + "/"                                                          // healthy.test: 127.0.0.1 only

	res := probe(t.Context(), prober, probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout, IPFamily: probing.IPFamilyIPv4})
	assert.True(t, res.Success, "%+v", res)
	res = probe(t.Context(), prober, probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout, IPFamily: probing.IPFamilyIPv6})
	assert.False(t, res.Success)
	assert.Contains(t, res.Message, "dial tcp6", "%+v", res)
	res = probe(t.Context(), prober, probing.TargetSpec{URL: srv.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout, IPFamily: probing.IPFamilyIPv6})
	assert.False(t, res.Success, "an IPv4 address with IPv6 only: %+v", res)
}
