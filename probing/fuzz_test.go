package probing_test

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	bpattern "github.com/networkio/webchecker/probing/pattern"
)

// The fuzz targets run their seed corpus as ordinary tests; `go test -fuzz
// FuzzX ./probing/` explores further.

// FuzzBuildURL checks that BuildURL never panics, that what it builds is a
// URL the prober accepts, and that the path can never change the server the
// URL names: the authority comes from host alone.
func FuzzBuildURL(f *testing.F) {
	for _, seed := range [][2]string{
		{"example.com", "/"},
		{"example.com:8080", "/healthz?full=1"},
		{"https://example.com:8443/", "/a/b%2Fc?x=%20y"},
		{"http://[::1]:8080", "/"},
		{"http://[fe80::1%25eth0]:80", "/"},
		{"EXAMPLE.com", ""},
		{"example.com", "//evil.test/x"},
		{"example.com", "/\\evil.test"},
		{"example.com", "/@evil.test"},
		{"example.com", "/..;@evil.test:80/"},
		{"example.com", "http://evil.test/"},
		{"example.com", "/#frag"},
		{"user:pw@example.com", "/"},
		{"example.com@evil.test", "/"},
		{"http://example.com?q", "/"},
		{"ftp://example.com", "/"},
		{"example.com:0", "/"},
		{"example.com:65536", "/"},
		{"example.com:", "/"},
		{"http://", "/"},
		{"http://exa mple.com", "/"},
		{"example.com", "/%zz"},
		{"example.com", "/\x00"},
		{"ex\u00e4mple.com", "/\u00fcber"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, host, path string) {
		built, err := probing.BuildURL(host, path)
		if err != nil {
			if built != "" {
				t.Fatalf("BuildURL(%q, %q) returned %q and an error", host, path, built)
			}
			return
		}
		u, err := url.Parse(built)
		if err != nil {
			t.Fatalf("BuildURL(%q, %q) = %q, which does not parse: %v", host, path, built, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("BuildURL(%q, %q) = %q: scheme %q, host %q, user %v, fragment %q", host, path, built, u.Scheme, u.Host, u.User, u.Fragment)
		}
		root, err := probing.BuildURL(host, "/")
		if err != nil {
			t.Fatalf("BuildURL(%q, %q) works but not with path /: %v", host, path, err)
		}
		rootURL, _ := url.Parse(root)
		if u.Host != rootURL.Host || u.Scheme != rootURL.Scheme {
			t.Fatalf("the path changed the server: BuildURL(%q, %q) = %q, but with / it is %q", host, path, built, root)
		}
		if want := authority(host); !strings.Contains(host, "%") && !strings.EqualFold(u.Host, want) {
			t.Fatalf("BuildURL(%q, %q) = %q names host %q, not %q", host, path, built, u.Host, want)
		}
		req, err := http.NewRequest(http.MethodGet, built, nil)
		if err != nil {
			t.Fatalf("BuildURL(%q, %q) = %q, which net/http refuses: %v", host, path, built, err)
		}
		if req.URL.Host != u.Host {
			t.Fatalf("net/http sends %q to %q, not %q", built, req.URL.Host, u.Host)
		}
	})
}

// authority is host without its scheme and a trailing slash.
func authority(host string) string {
	for _, scheme := range []string{"http://", "https://"} {
		host = strings.TrimPrefix(host, scheme)
	}
	return strings.TrimSuffix(host, "/")
}

// FuzzProbePath probes a loopback server through a prober whose egress
// policy allows only 127.0.0.1: whatever the path, the probe either is
// refused before it is sent or reaches that server, with that path.
func FuzzProbePath(f *testing.F) {
	for _, seed := range []string{"/", "/healthz?full=1", "//evil.test/", "/@evil.test", "/\\evil.test", "/%2e%2e/", "/a b", "/?q=%zz", "/\r\nHost: evil.test"} {
		f.Add(seed)
	}
	var mu sync.Mutex
	var lastHost, lastURI string
	srv := startFuzzServer(f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastHost, lastURI = r.Host, r.RequestURI
		mu.Unlock()
	}))
	prober := probing.NewHTTPProber(probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{
		Deny:  []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")},
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})})
	f.Cleanup(prober.CloseIdleConnections)
	host := srv.Listener.Addr().String()

	f.Fuzz(func(t *testing.T, path string) {
		built, err := probing.BuildURL(host, path)
		if err != nil {
			return
		}
		mu.Lock()
		lastHost, lastURI = "", ""
		mu.Unlock()
		res := probe(t.Context(), prober, probing.TargetSpec{URL: built, Method: http.MethodGet, Timeout: 5 * time.Second})
		switch {
		case res.Success:
			mu.Lock()
			gotHost, gotURI := lastHost, lastURI
			mu.Unlock()
			if gotHost != host {
				t.Fatalf("probe of %q reached the server with Host %q", built, gotHost)
			}
			u, _ := url.Parse(built)
			if gotURI != u.RequestURI() {
				t.Fatalf("probe of %q asked for %q, want %q", built, gotURI, u.RequestURI())
			}
		case res.Reason == probing.ReasonEgressDenied:
			t.Fatalf("probe of %q tried another address: %s", built, res.Message)
		case res.Reason != probing.ReasonInvalidTarget:
			t.Fatalf("probe of %q failed: %+v", built, res)
		}
	})
}

// startFuzzServer starts an httptest server for a fuzz target.
func startFuzzServer(tb testing.TB, h http.Handler) *httptestServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &httptestServer{Listener: ln, server: &http.Server{Handler: h}}
	go func() { _ = s.server.Serve(ln) }()
	tb.Cleanup(func() { _ = s.server.Close() })
	return s
}

type httptestServer struct {
	Listener net.Listener
	server   *http.Server
}

// FuzzStatusCodes checks that NewTarget never panics on expected status
// codes, accepts exactly the lists of valid codes, and keeps them as a
// sorted set that Target.Accepts agrees with.
func FuzzStatusCodes(f *testing.F) {
	for _, seed := range [][]byte{{}, {200, 0}, {0xc8, 0, 0xc8, 0}, {99, 0}, {0x57, 0x02}, {0xff, 0xff}, {0x2c, 0x01, 0xc8, 0x00, 0x94, 0x01}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// Two bytes, little-endian and signed, per code.
		var codes []int
		for i := 0; i+1 < len(raw); i += 2 {
			codes = append(codes, int(int16(uint16(raw[i])|uint16(raw[i+1])<<8)))
		}
		target, err := probing.NewTarget(probing.TargetSpec{URL: "http://127.0.0.1/", Method: http.MethodGet, Timeout: time.Second,
			ExpectedStatusCodes: slices.Clone(codes)})
		valid := !slices.ContainsFunc(codes, func(c int) bool { return c < 100 || c > 599 })
		if (err == nil) != valid {
			t.Fatalf("NewTarget with codes %v: error %v, but valid=%v", codes, err, valid)
		}
		if err != nil {
			return
		}
		got := target.Spec().ExpectedStatusCodes
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("NewTarget with codes %v keeps %v: not a sorted set", codes, got)
		}
		for code := 0; code < 700; code++ {
			want := slices.Contains(codes, code)
			if len(codes) == 0 {
				want = code >= 200 && code < 400
			}
			if target.Accepts(code) != want {
				t.Fatalf("codes %v: Accepts(%d) = %v", codes, code, !want)
			}
		}
	})
}

// FuzzBodyMatch checks that NewTarget never panics on a body match, and
// accepts exactly those whose expression is not empty and within the
// matching work bound with a maxBytes in [1, MaxBodyMatchBytes], keeping
// both.
func FuzzBodyMatch(f *testing.F) {
	for _, pattern := range []string{
		"ok", `"status":\s*"up"`, `\p{Greek}+`, "a{1000}", "(a*)*$", "[[:alpha:]]", "", "(?i)OK", strings.Repeat("x", 1025),
		strings.Repeat("[ab]{999}", 2),
	} {
		f.Add(pattern, int64(1))
		f.Add(pattern, int64(probing.MaxBodyMatchBytes))
		f.Add(pattern, int64(0))
		f.Add(pattern, int64(-1))
		f.Add(pattern, int64(probing.MaxBodyMatchBytes+1))
	}
	f.Fuzz(func(t *testing.T, pattern string, maxBytes int64) {
		re, err := bpattern.Compile(pattern)
		if err != nil {
			return // compiling is the caller's (and the pattern package's)
		}
		target, err := probing.NewTarget(probing.TargetSpec{URL: "http://127.0.0.1/", Method: http.MethodGet, Timeout: time.Second,
			BodyMatch: &probing.BodyMatch{Regexp: re, MaxBytes: maxBytes}})
		inLimits := pattern != "" && maxBytes >= 1 && maxBytes <= probing.MaxBodyMatchBytes &&
			bpattern.CheckWork(re, maxBytes) == nil
		if (err == nil) != inLimits {
			t.Fatalf("NewTarget with body match %q, %d: error %v, in limits %v", pattern, maxBytes, err, inLimits)
		}
		if err != nil {
			return
		}
		if m := target.Spec().BodyMatch; m.Regexp.String() != pattern || m.MaxBytes != maxBytes {
			t.Fatalf("NewTarget with body match %q, %d keeps %v, %d", pattern, maxBytes, m.Regexp, m.MaxBytes)
		}
	})
}
