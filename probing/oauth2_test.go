package probing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

const (
	oauthClient = "probe-client"
	oauthSecret = "s3cr3t-of-the-client"
)

// tokenEndpoint is a loopback OAuth2 token endpoint: it issues numbered
// tokens to oauthClient with oauthSecret, living expiresIn seconds, and
// answers status instead when it is set.
type tokenEndpoint struct {
	issued    atomic.Int64
	expiresIn atomic.Int64
	status    atomic.Int64
	mu        sync.Mutex
	scopes    []string
}

func startTokenEndpoint(t *testing.T, expiresIn int64) (*tokenEndpoint, string) {
	e := &tokenEndpoint{}
	e.expiresIn.Store(expiresIn)
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if r.Method != http.MethodPost || r.FormValue("grant_type") != "client_credentials" || !ok || id != oauthClient || secret != oauthSecret {
			http.Error(w, `{"error":"invalid_client","error_description":"leaked-description"}`, http.StatusUnauthorized)
			return
		}
		if status := e.status.Load(); status != 0 {
			http.Error(w, `{"error":"leaked-description"}`, int(status))
			return
		}
		e.mu.Lock()
		e.scopes = strings.Fields(r.FormValue("scope"))
		e.mu.Unlock()
		n := e.issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("token-%d", n), "token_type": "Bearer", "expires_in": e.expiresIn.Load()})
	}))
	return e, srv.URL + "/oauth/token"
}

// apiRequiring is a target that answers 200 only to the bearer token
// that want returns (any token when it returns ""), 401 otherwise, and
// records the tokens it saw.
func apiRequiring(t *testing.T, want func() string) (string, func() []string) {
	var mu sync.Mutex
	var seen []string
	srv := startServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		seen = append(seen, token)
		mu.Unlock()
		if w := want(); w != "" && token != w {
			rw.WriteHeader(http.StatusUnauthorized)
		}
	}))
	return srv.URL + "/health", func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

func oauthTarget(api, tokenURL string) probing.TargetSpec {
	return probing.TargetSpec{URL: api, Method: http.MethodGet, Timeout: relaxedTimeout, OAuth2: &probing.OAuth2{
		TokenURL: tokenURL, ClientID: oauthClient, ClientSecret: oauthSecret, Scopes: []string{"health:read", "openid"},
	}}
}

// TestOAuth2ClientCredentials: a probe fetches a token with the client
// credentials grant and sends it; probes reuse it until shortly before
// it expires, then fetch another; a target refusing it (401) makes the
// next probe fetch a new one.
func TestOAuth2ClientCredentials(t *testing.T) {
	t.Parallel()
	endpoint, tokenURL := startTokenEndpoint(t, 3600)
	var current atomic.Value
	current.Store("token-1")
	api, seen := apiRequiring(t, func() string { return current.Load().(string) })
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	target := mustTarget(t, oauthTarget(api, tokenURL))

	for range 3 {
		res := prober.Probe(context.Background(), target)
		require.Equal(t, probing.ReasonSucceeded, res.Reason, res.Message)
	}
	assert.EqualValues(t, 1, endpoint.issued.Load(), "one token for three probes")
	assert.Equal(t, []string{"token-1", "token-1", "token-1"}, seen())
	endpoint.mu.Lock()
	assert.Equal(t, []string{"health:read", "openid"}, endpoint.scopes)
	endpoint.mu.Unlock()

	// The target stops accepting token-1: the probe fails with its 401,
	// and the next one fetches token-2.
	current.Store("token-2")
	res := prober.Probe(context.Background(), target)
	assert.Equal(t, probing.ReasonUnexpectedStatus, res.Reason, res.Message)
	res = prober.Probe(context.Background(), target)
	assert.Equal(t, probing.ReasonSucceeded, res.Reason, res.Message)
	assert.EqualValues(t, 2, endpoint.issued.Load())
}

// TestOAuth2TokenExpiry: a token living 2 s is used for a second or so,
// then replaced before it expires.
func TestOAuth2TokenExpiry(t *testing.T) {
	t.Parallel()
	endpoint, tokenURL := startTokenEndpoint(t, 2)
	api, seen := apiRequiring(t, func() string { return "" }) // any token: only counted
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	target := mustTarget(t, oauthTarget(api, tokenURL))

	_ = prober.Probe(context.Background(), target)
	_ = prober.Probe(context.Background(), target)
	assert.EqualValues(t, 1, endpoint.issued.Load(), "the token is reused while it lives")
	require.Eventually(t, func() bool {
		_ = prober.Probe(context.Background(), target)
		return endpoint.issued.Load() == 2
	}, 10*time.Second, 100*time.Millisecond, "the token was not renewed")
	tokens := seen()
	assert.Equal(t, "token-2", tokens[len(tokens)-1])
}

// TestOAuth2Failures: a token endpoint that refuses the client, fails,
// or answers what is not a token fails the probe with ReasonTokenFailed
// (an egress denial with ReasonEgressDenied) and the target is never
// asked; no message holds the client's secret, a token, or what the
// endpoint answered.
func TestOAuth2Failures(t *testing.T) {
	t.Parallel()
	refusing, refusingURL := startTokenEndpoint(t, 3600)
	refusing.status.Store(http.StatusBadRequest)
	garbage := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<html>leaked-description</html>`))
	}))
	macToken := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"access_token":"leaked-description","token_type":"mac"}`))
	}))
	_, goodURL := startTokenEndpoint(t, 3600)
	api, seen := apiRequiring(t, func() string { return "" })

	cases := map[string]struct {
		spec        func() probing.TargetSpec
		egress      *egress.Policy
		wantReason  probing.Reason
		wantMessage string
	}{
		"wrong secret": {spec: func() probing.TargetSpec {
			s := oauthTarget(api, goodURL)
			s.OAuth2.ClientSecret = "wrong-secret-value"
			return s
		}, wantReason: probing.ReasonTokenFailed, wantMessage: "the token endpoint answered 401 Unauthorized"},
		"refused":    {spec: func() probing.TargetSpec { return oauthTarget(api, refusingURL) }, wantReason: probing.ReasonTokenFailed, wantMessage: "the token endpoint answered 400 Bad Request"},
		"not JSON":   {spec: func() probing.TargetSpec { return oauthTarget(api, garbage.URL) }, wantReason: probing.ReasonTokenFailed, wantMessage: "is not a JSON token response"},
		"not bearer": {spec: func() probing.TargetSpec { return oauthTarget(api, macToken.URL) }, wantReason: probing.ReasonTokenFailed, wantMessage: "not a bearer token"},
		"closed":     {spec: func() probing.TargetSpec { return oauthTarget(api, "http://"+closedPort(t)+"/token") }, wantReason: probing.ReasonTokenFailed, wantMessage: "connection refused"},
		"egress denied": {spec: func() probing.TargetSpec { return oauthTarget(api, goodURL) },
			egress: egress.NewPolicy(egress.Options{}), wantReason: probing.ReasonEgressDenied, wantMessage: "egress to 127.0.0.1 denied"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := probing.ProberOptions{}
			if tc.egress != nil {
				opts.Egress = tc.egress
			}
			prober := newProber(t, newDNS(t), opts)
			spec := tc.spec()
			res := probe(context.Background(), prober, spec)
			assert.Equal(t, tc.wantReason, res.Reason, res.Message)
			assert.Contains(t, res.Message, "OAuth2 token request to "+fmt.Sprintf("%q", spec.OAuth2.TokenURL)+": ")
			assert.Contains(t, res.Message, tc.wantMessage)
			for _, secret := range []string{oauthSecret, "wrong-secret-value", "leaked-description", "token-"} {
				assert.NotContains(t, res.Message, secret)
			}
		})
	}
	assert.Empty(t, seen(), "the target is not asked without a token")
}

// TestOAuth2MustBeValid: NewTarget refuses an OAuth2 grant with a token
// URL that is not http(s), with credentials in it, without a client id,
// or beside basic auth or a bearer token, and on another kind.
func TestOAuth2MustBeValid(t *testing.T) {
	t.Parallel()
	base := func() probing.TargetSpec { return oauthTarget("http://healthy.test/", "https://auth.test/token") }
	for name, mutate := range map[string]func(*probing.TargetSpec){
		"ftp token URL":  func(s *probing.TargetSpec) { s.OAuth2.TokenURL = "ftp://auth.test/token" },
		"credentials":    func(s *probing.TargetSpec) { s.OAuth2.TokenURL = "https://u:p@auth.test/token" },
		"no client id":   func(s *probing.TargetSpec) { s.OAuth2.ClientID = "" },
		"and basic auth": func(s *probing.TargetSpec) { s.BasicAuth = &probing.BasicAuth{Username: "u"} },
		"and a bearer":   func(s *probing.TargetSpec) { s.BearerToken = "t" },
		"on tcp":         func(s *probing.TargetSpec) { s.URL, s.Method = "tcp://healthy.test:1", "" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec := base()
			mutate(&spec)
			_, err := probing.NewTarget(spec)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), oauthSecret)
		})
	}
	_, err := probing.NewTarget(base())
	require.NoError(t, err)
}

// TestOAuth2ThroughTheProxy: the token request goes through the
// target's proxy, as its probes do.
func TestOAuth2ThroughTheProxy(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{DNSServer: dns.Addr()})
	_, tokenURL := startTokenEndpoint(t, 3600)
	api, _ := apiRequiring(t, func() string { return "" })
	spec := oauthTarget(api, tokenURL)
	spec.Proxy = &probing.Proxy{URL: proxy.URL()}
	res := probe(context.Background(), newProber(t, dns, probing.ProberOptions{}), spec)
	require.Equal(t, probing.ReasonSucceeded, res.Reason, res.Message)
	assert.Contains(t, proxy.ForwardedURLs(), tokenURL, "the token request did not go through the proxy")
	assert.Contains(t, proxy.ForwardedURLs(), api)
}
