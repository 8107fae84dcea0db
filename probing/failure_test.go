package probing_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// Failures: each must get its Reason and a message that names what failed
// and stays the same while the failure does.

func TestHTTPProberFailures(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	srv := probeServer(t)
	refused := "http://" + closedPort(t) + "/"
	_, refusedPort, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(refused, "http://"), "/"))

	runProbeCases(t, prober, map[string]probeCase{
		"body cut short": {
			url:        srv.URL + "/truncated",
			wantReason: probing.ReasonConnectionFailed, wantCode: 200,
			wantMessage: `Get "` + srv.URL + `/truncated": read response body: unexpected EOF`,
		},
		"connection refused": {
			url:         refused,
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: `Get "` + refused + `": dial tcp ` + strings.TrimSuffix(strings.TrimPrefix(refused, "http://"), "/") + `: connect: connection refused`,
		},
		"connection refused, by name: the name, not the address": {
			url:         "http://healthy.test:" + refusedPort + "/",
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: `Get "http://healthy.test:` + refusedPort + `/": dial tcp healthy.test:` + refusedPort + `: connect: connection refused`,
		},
		"unresolvable host": {
			url:         "http://badnews.me/",
			wantReason:  probing.ReasonDNSFailed,
			wantMessage: `Get "http://badnews.me/": dial tcp: lookup badnews.me on ` + dns.Addr() + `: no such host`,
		},
	})
}

// A name whose DNS answer rotates between addresses (round-robin DNS)
// fails with the same message at every probe: messages name the host and
// port of the URL, not the address the name resolved to.
func TestHTTPProberStableMessagesRoundRobin(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		// serve starts what listens on both addresses, or nothing.
		serve      func(t *testing.T, a, b net.Listener)
		wantReason probing.Reason
		wantCause  string // the end of the message
	}{
		"connection refused by both addresses": {
			serve: func(t *testing.T, a, b net.Listener) {
				require.NoError(t, a.Close())
				require.NoError(t, b.Close())
			},
			wantReason: probing.ReasonConnectionFailed, wantCause: ": connect: connection refused",
		},
		"connection reset by both addresses": {
			serve: func(t *testing.T, a, b net.Listener) {
				resetOn(t, a)
				resetOn(t, b)
			},
			wantReason: probing.ReasonConnectionFailed,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b, port := listenPair(t)
			tc.serve(t, a, b)
			dns := probetest.NewTestDNSServer(t, map[string][]net.IP{"rr.test": {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)}})
			dns.Rotate(true)
			prober := newProber(t, dns, probing.ProberOptions{})
			target := probing.TargetSpec{URL: "http://rr.test:" + port + "/", Method: http.MethodGet, Timeout: relaxedTimeout}

			first := probe(t.Context(), prober, target)
			t.Logf("message: %s", first.Message)
			assert.Equal(t, tc.wantReason, first.Reason, "%+v", first)
			assert.True(t, strings.HasPrefix(first.Message, `Get "http://rr.test:`+port+`/": `), first.Message)
			assert.True(t, strings.HasSuffix(first.Message, tc.wantCause), first.Message)
			assert.NotContains(t, first.Message, "127.0.0.", "the resolved address is not named")
			for i := range 4 {
				next := probe(t.Context(), prober, target)
				assert.True(t, first.SameOutcome(next), "probe %d:\n%s\n%s", i+2, first.Message, next.Message)
			}
		})
	}
}

func TestHTTPProberTLSErrors(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})

	tlsSrv := startTLSServer(t, nil, 0)
	plainSrv := startServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	tests := map[string]struct {
		url         string
		wantContain string
	}{
		"untrusted certificate": {
			url:         tlsSrv.URL + "/",
			wantContain: "x509: certificate signed by unknown authority",
		},
		"untrusted certificate by name": {
			url:         byName(t, tlsSrv) + "/",
			wantContain: "x509: certificate",
		},
		"HTTPS to an HTTP server": {
			url:         "https://" + plainSrv.Listener.Addr().String() + "/",
			wantContain: "server gave HTTP response to HTTPS client",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := probe(t.Context(), prober, probing.TargetSpec{URL: tc.url, Method: http.MethodGet, Timeout: relaxedTimeout})
			assert.False(t, res.Success)
			assert.Equal(t, probing.ReasonTLSError, res.Reason, "%+v", res)
			assert.Zero(t, res.StatusCode)
			assert.Contains(t, res.Message, tc.wantContain)
			assert.True(t, strings.HasPrefix(res.Message, `Get "`+tc.url+`": `), res.Message)
		})
	}
}

// An unchanged failure must give the same message every time.
func TestHTTPProberStableMessages(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})

	slow := startServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		untilDone(r, 30*time.Second)
	}))
	loop := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path, http.StatusFound)
	}))
	tlsSrv := startTLSServer(t, nil, 0)

	tests := map[string]struct {
		target     probing.TargetSpec
		wantReason probing.Reason
	}{
		"connection refused": {
			target:     probing.TargetSpec{URL: "http://" + closedPort(t) + "/", Method: http.MethodGet, Timeout: relaxedTimeout},
			wantReason: probing.ReasonConnectionFailed,
		},
		"connection reset": {
			target:     probing.TargetSpec{URL: resetServer(t), Method: http.MethodGet, Timeout: relaxedTimeout},
			wantReason: probing.ReasonConnectionFailed,
		},
		"unresolvable host": {
			target:     probing.TargetSpec{URL: "http://badnews.me/", Method: http.MethodGet, Timeout: relaxedTimeout},
			wantReason: probing.ReasonDNSFailed,
		},
		"timeout": {
			target:     probing.TargetSpec{URL: byName(t, slow) + "/", Method: http.MethodGet, Timeout: 200 * time.Millisecond},
			wantReason: probing.ReasonTimeout,
		},
		"untrusted certificate": {
			target:     probing.TargetSpec{URL: tlsSrv.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout},
			wantReason: probing.ReasonTLSError,
		},
		"redirect loop": {
			target:     probing.TargetSpec{URL: loop.URL + "/a", Method: http.MethodGet, Timeout: relaxedTimeout, FollowRedirects: true},
			wantReason: probing.ReasonTooManyRedirects,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first := probe(t.Context(), prober, tc.target)
			second := probe(t.Context(), prober, tc.target)
			t.Logf("message: %s", first.Message)
			assert.Equal(t, tc.wantReason, first.Reason, "%+v", first)
			assert.Equal(t, first.Message, second.Message)
			assert.True(t, first.SameOutcome(second), "%+v\n%+v", first, second)
			// No ephemeral local port ("127.0.0.1:54321->").
			assert.NotRegexp(t, `:\d+->`, first.Message)
			assert.NotContains(t, first.Message, "Client.Timeout")
		})
	}
}
