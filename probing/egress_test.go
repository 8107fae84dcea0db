package probing_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

// deniedAddr is inside the loopback block, so that a test can listen on it,
// and denied by the tests' policy: nothing here dials outside 127.0.0.0/8.
const deniedAddr = "127.0.0.2"

// loopbackOne allows 127.0.0.1 (and no other loopback address), which every
// policy denies by default.
var loopbackOne = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// startServerOn starts an httptest server listening on ip, counting its
// requests.
func startServerOn(t *testing.T, ip string, hits *atomic.Int64) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	srv := &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) })},
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPProberEgressPolicy(t *testing.T) {
	t.Parallel()
	dns := probetest.NewTestDNSServer(t, map[string][]net.IP{
		"allowed.test": {net.IPv4(127, 0, 0, 1)},
		"denied.test":  {net.ParseIP(deniedAddr)},
	})
	prefixes, err := egress.ParseCIDRs([]string{deniedAddr + "/32"})
	require.NoError(t, err)
	prober := newProber(t, dns, probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{Deny: prefixes, Allow: loopbackOne})})

	var deniedHits, allowedHits atomic.Int64
	denied := startServerOn(t, deniedAddr, &deniedHits)
	allowed := startServerOn(t, "127.0.0.1", &allowedHits)
	_, deniedPort, _ := net.SplitHostPort(denied.Listener.Addr().String())
	_, allowedPort, _ := net.SplitHostPort(allowed.Listener.Addr().String())
	redirector := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+strings.TrimPrefix(r.URL.Path, "/to/")+"/", http.StatusFound)
	}))

	tests := map[string]struct {
		url         string
		wantContain string
	}{
		"denied address": {
			url:         denied.URL + "/",
			wantContain: `Get "` + denied.URL + `/": dial tcp ` + deniedAddr + ":" + deniedPort + ": egress to 127.0.0.2 denied: denied range 127.0.0.2/32 (--deny-cidrs)",
		},
		"name resolving to a denied address": {
			url:         "http://denied.test:" + deniedPort + "/",
			wantContain: "egress to 127.0.0.2 denied: denied range 127.0.0.2/32",
		},
		"redirect from an allowed to a denied address": {
			url: redirector.URL + "/to/" + deniedAddr + ":" + deniedPort,
			// The target's URL; the redirect's is the server's choice.
			wantContain: `Get "` + redirector.URL + "/to/" + deniedAddr + ":" + deniedPort + `" (after a redirect): dial tcp (a redirect's address): egress to`,
		},
		"redirect to a name resolving to a denied address": {
			url:         redirector.URL + "/to/denied.test:" + deniedPort,
			wantContain: `Get "` + redirector.URL + "/to/denied.test:" + deniedPort + `" (after a redirect): dial tcp (a redirect's address): egress to ` + deniedAddr + ` denied`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := probe(t.Context(), prober, probing.TargetSpec{URL: tc.url, Method: http.MethodGet, Timeout: relaxedTimeout, FollowRedirects: true})
			assert.False(t, res.Success)
			assert.Equal(t, probing.ReasonEgressDenied, res.Reason, "%+v", res)
			assert.Contains(t, res.Message, tc.wantContain)
			assert.Contains(t, res.Message, " denied: ")
			again := probe(t.Context(), prober, probing.TargetSpec{URL: tc.url, Method: http.MethodGet, Timeout: relaxedTimeout, FollowRedirects: true})
			assert.True(t, res.SameOutcome(again), "stable message:\n%s\n%s", res.Message, again.Message)
		})
	}
	assert.Zero(t, deniedHits.Load(), "a denied server was reached")

	// The same prober reaches allowed addresses, by address, by name and
	// through a redirect.
	for _, url := range []string{allowed.URL + "/", "http://allowed.test:" + allowedPort + "/", redirector.URL + "/to/allowed.test:" + allowedPort} {
		res := probe(t.Context(), prober, probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout, FollowRedirects: true})
		assert.True(t, res.Success, "%s: %+v", url, res)
	}
	assert.EqualValues(t, 3, allowedHits.Load())

	// An allowed range punches a hole into the denied ones.
	holed := newProber(t, dns, probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{
		Deny: prefixes, Allow: []netip.Prefix{netip.MustParsePrefix(deniedAddr + "/32")}, DenyPrivate: true,
	})})
	res := probe(t.Context(), holed, probing.TargetSpec{URL: "http://denied.test:" + deniedPort + "/", Method: http.MethodGet, Timeout: relaxedTimeout})
	assert.True(t, res.Success, "%+v", res)
	assert.EqualValues(t, 1, deniedHits.Load())
	res = probe(t.Context(), holed, probing.TargetSpec{URL: allowed.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout})
	assert.Equal(t, probing.ReasonEgressDenied, res.Reason, "private networks denied: %+v", res)
	assert.Contains(t, res.Message, "egress to 127.0.0.1 denied: loopback (default)")
}
