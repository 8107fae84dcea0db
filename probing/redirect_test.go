package probing_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestHTTPProberRedirectKeepsCredentialsOnTheirOrigin follows redirects
// that leave the first request's origin (scheme, host or port) with each
// kind of credential: none reaches a request after the origin changed,
// not even when the chain comes back to it; a redirect within the origin
// keeps them, and a literal header that is no credential follows every
// redirect. The change of scheme alone is tested on one loopback port that
// serves both TLS and plain HTTP (see probetest.DualServer).
func TestHTTPProberRedirectKeepsCredentialsOnTheirOrigin(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	cert := probetest.NewCertificate(t, "healthy.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))

	// A chain starts at the first URL and goes through the others, the
	// last one answering 200; {P} is the first server's port, {Q} the
	// second's.
	chains := map[string]struct {
		hops []string
		keep bool
	}{
		"https to http, same host and port": {hops: []string{"https://127.0.0.1:{P}", "http://127.0.0.1:{P}"}},
		"http to https, same host and port": {hops: []string{"http://127.0.0.1:{P}", "https://127.0.0.1:{P}"}},
		"another port":                      {hops: []string{"https://127.0.0.1:{P}", "https://127.0.0.1:{Q}"}},
		"another host, same port":           {hops: []string{"http://127.0.0.1:{P}", "http://healthy.test:{P}"}},
		"away and back":                     {hops: []string{"https://127.0.0.1:{P}", "http://127.0.0.1:{P}", "https://127.0.0.1:{P}"}},
		"same origin, https":                {hops: []string{"https://127.0.0.1:{P}", "https://127.0.0.1:{P}"}, keep: true},
		"same origin, http":                 {hops: []string{"http://127.0.0.1:{P}", "http://127.0.0.1:{P}", "http://127.0.0.1:{P}"}, keep: true},
		"same origin, a relative Location":  {hops: []string{"https://127.0.0.1:{P}", ""}, keep: true},
	}
	credentials := map[string]struct {
		set    func(*probing.TargetSpec)
		header string
		want   string
	}{
		"bearer token (bearerTokenSecretRef)": {
			set:    func(t *probing.TargetSpec) { t.BearerToken = "t0ken" },
			header: "Authorization", want: "Bearer t0ken",
		},
		"basic auth (basicAuthSecretRef)": {
			set:    func(t *probing.TargetSpec) { t.BasicAuth = &probing.BasicAuth{Username: "alice", Password: "s3cret"} },
			header: "Authorization", want: "Basic YWxpY2U6czNjcmV0",
		},
		"header from a Secret (headers[].valueFrom)": {
			set: func(t *probing.TargetSpec) {
				t.Headers = append(t.Headers, probing.Header{Name: "X-Api-Key", Value: "k3y", Sensitive: true})
			},
			header: "X-Api-Key", want: "k3y",
		},
		"literal Authorization header": {
			set: func(t *probing.TargetSpec) {
				t.Headers = append(t.Headers, probing.Header{Name: "authorization", Value: "Bearer literal"})
			},
			header: "Authorization", want: "Bearer literal",
		},
		"literal Cookie header": {
			set: func(t *probing.TargetSpec) {
				t.Headers = append(t.Headers, probing.Header{Name: "Cookie", Value: "session=1"})
			},
			header: "Cookie", want: "session=1",
		},
	}
	for chainName, chain := range chains {
		for credName, cred := range credentials {
			t.Run(chainName+"/"+credName, func(t *testing.T) {
				t.Parallel()
				rec := &hopRecorder{}
				first, second := startDualServer(t, cert, rec), startDualServer(t, cert, rec)
				target := probing.TargetSpec{
					URL:             redirectChain(chain.hops, first.Port(), second.Port()),
					Method:          http.MethodGet,
					Timeout:         relaxedTimeout,
					FollowRedirects: true,
					TLS:             probing.TLSOptions{RootCAs: cert.PEM},
					Headers:         []probing.Header{{Name: "X-Plain", Value: "visible"}},
				}
				cred.set(&target)

				res := probe(t.Context(), prober, target)
				require.True(t, res.Success, "%+v", res)
				hops := rec.get()
				require.Len(t, hops, len(chain.hops), "every hop is requested once")
				assert.Equal(t, "/end", hops[len(hops)-1].path, "the chain reaches its end")
				for i, h := range chain.hops {
					if scheme, _, ok := strings.Cut(h, "://"); ok {
						require.Equal(t, scheme, hops[i].scheme, "hop %d came over the wrong protocol", i)
					}
				}
				assert.Equal(t, cred.want, hops[0].header.Get(cred.header), "the first request carries the credential")
				for i, hop := range hops[1:] {
					if chain.keep {
						assert.Equal(t, cred.want, hop.header.Get(cred.header), "hop %d (%s://%s) lost the credential within the origin", i+1, hop.scheme, hop.host)
					} else {
						assert.Empty(t, hop.header.Values(cred.header), "hop %d (%s://%s) got the credential of another origin", i+1, hop.scheme, hop.host)
					}
					assert.Equal(t, "visible", hop.header.Get("X-Plain"), "hop %d: a literal header follows every redirect", i+1)
				}
			})
		}
	}
}

// redirectChain is the URL of the first hop, whose query makes the
// servers of startDualServer redirect through the others in turn: each hop
// is the scheme, host and port of a URL ("{P}" and "{Q}" stand for the
// ports p and q; empty for a Location that is only a path), and the last
// one's path is /end.
func redirectChain(hops []string, p, q string) string {
	next := "/end"
	for i := len(hops) - 1; i >= 0; i-- {
		origin := strings.NewReplacer("{P}", p, "{Q}", q).Replace(hops[i])
		if i == len(hops)-1 {
			next = origin + next
			continue
		}
		next = origin + "/redirect?to=" + url.QueryEscape(next)
	}
	return next
}

// hop is what a startDualServer server saw of one request.
type hop struct {
	scheme, host, path string
	header             http.Header
}

// hopRecorder keeps the requests of startDualServer servers in the order
// they came.
type hopRecorder struct {
	mu   sync.Mutex
	hops []hop
}

func (r *hopRecorder) add(h hop) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hops = append(r.hops, h)
}

func (r *hopRecorder) get() []hop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hop(nil), r.hops...)
}

// startDualServer starts a probetest.DualServer (plain HTTP and HTTPS
// with cert on one loopback port) whose /redirect answers 302 to the URL
// of its "to" parameter, and every other path 200. Every request goes to
// rec.
func startDualServer(t *testing.T, cert probetest.Certificate, rec *hopRecorder) *probetest.DualServer {
	t.Helper()
	return probetest.NewTestDualServer(t, cert.TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		rec.add(hop{scheme: scheme, host: r.Host, path: r.URL.Path, header: r.Header.Clone()})
		if r.URL.Path == "/redirect" {
			w.Header().Set("Location", r.URL.Query().Get("to"))
			w.WriteHeader(http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
}
