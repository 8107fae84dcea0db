package probing_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
)

func TestHTTPProberStatusCodes(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	srv := probeServer(t)

	runProbeCases(t, prober, map[string]probeCase{
		"2xx by IP": {
			url:         srv.URL + "/ok",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
			wantMessage: probing.ReadyMessage,
		},
		"2xx by name": {
			url:         byName(t, srv) + "/ok",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
			wantMessage: probing.ReadyMessage,
		},
		"500 is unexpected": {
			url:        srv.URL + "/error",
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 500,
			wantMessage: "unexpected status code 500 (expected 2xx or 3xx)",
		},
		"204 when 200 is expected": {
			url: srv.URL + "/nocontent", expected: []int{200},
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 204,
			wantMessage: "unexpected status code 204 (expected one of 200)",
		},
		"204 when 200 or 201 is expected": {
			url: byName(t, srv) + "/nocontent", expected: []int{200, 201},
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 204,
			wantMessage: "unexpected status code 204 (expected one of 200, 201)",
		},
		"204 when 204 is expected": {
			url: srv.URL + "/nocontent", expected: []int{204},
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 204,
			wantMessage: probing.ReadyMessage,
		},
		"HEAD": {
			url: srv.URL + "/head", method: http.MethodHead,
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
		},
		"GET where the server wants HEAD": {
			url: srv.URL + "/head", method: http.MethodGet,
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 405,
		},
		"user agent": {
			url:         srv.URL + "/user-agent",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
		},
	})

	// The host names were resolved by the stub, not by the system resolver.
	t.Cleanup(func() { assert.Positive(t, dns.Queries()) })
}

func TestHTTPProberRedirects(t *testing.T) {
	t.Parallel()
	prober := newProber(t, newDNS(t), probing.ProberOptions{})
	srv := probeServer(t)

	runProbeCases(t, prober, map[string]probeCase{
		"redirect followed": {
			url: srv.URL + "/redirect", follow: true,
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
		},
		"redirect followed, 200 expected": {
			url: byName(t, srv) + "/redirect", follow: true, expected: []int{200},
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 200,
		},
		"redirect not followed, default codes": {
			url:         srv.URL + "/redirect",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 302,
		},
		"redirect not followed, 200 expected": {
			url: srv.URL + "/redirect", expected: []int{200},
			wantReason: probing.ReasonUnexpectedStatus, wantCode: 302,
			wantMessage: "unexpected status code 302 (expected one of 200)",
		},
		"redirect loop": {
			url: srv.URL + "/loop", follow: true,
			wantReason: probing.ReasonTooManyRedirects, wantCode: 302,
			wantMessage: `Get "` + srv.URL + `/loop": stopped after 10 redirects`,
		},
		"redirect loop not followed": {
			url:         srv.URL + "/loop",
			wantSuccess: true, wantReason: probing.ReasonSucceeded, wantCode: 302,
		},
	})
}

func TestHTTPProberTimeout(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	srv := startServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		untilDone(r, 30*time.Second) // much longer than the probe's timeout
	}))

	const timeout = 200 * time.Millisecond
	target := probing.TargetSpec{URL: srv.URL + "/slow", Method: http.MethodGet, Timeout: timeout}
	start := time.Now()
	res := probe(t.Context(), prober, target)
	elapsed := time.Since(start)

	assert.False(t, res.Success)
	assert.Equal(t, probing.ReasonTimeout, res.Reason)
	assert.Equal(t, `Get "`+srv.URL+`/slow": timeout after 200ms`, res.Message)
	assert.Zero(t, res.StatusCode)
	assert.GreaterOrEqual(t, res.Duration, timeout)
	assert.Less(t, elapsed, timeout+slack, "the probe must return at its timeout")
}

func TestHTTPProberHugeBody(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{}) // 64 KiB limit

	const bodySize = 1 << 30
	var written atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		defer once.Do(func() { close(done) })
		w.Header().Set("Content-Length", strconv.Itoa(bodySize))
		chunk := make([]byte, 32<<10)
		for written.Load() < bodySize {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return // the prober closed the connection
			}
		}
	}))

	const timeout = 30 * time.Second
	start := time.Now()
	res := probe(t.Context(), prober, probing.TargetSpec{URL: byName(t, srv) + "/huge", Method: http.MethodGet, Timeout: timeout})
	elapsed := time.Since(start)

	assert.True(t, res.Success, "%+v", res)
	assert.Equal(t, 200, res.StatusCode)
	assert.Less(t, elapsed, timeout/3, "reading the body must stop at the limit")

	// The prober must hang up instead of draining the body: the handler's
	// writes then fail.
	select {
	case <-done:
	case <-time.After(relaxedTimeout):
		t.Fatalf("the server is still sending after %d bytes: the prober did not close the connection", written.Load())
	}
	t.Logf("server wrote %d bytes", written.Load())
	// The server wrote the 64 KiB read, plus what the kernel's socket
	// buffers held (a few MiB on loopback), but nowhere near the body.
	assert.Less(t, written.Load(), int64(probing.DefaultBodyLimit+32<<20))
}

func TestHTTPProberSlowBody(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flusher := w.(http.Flusher)
		w.WriteHeader(http.StatusOK)
		flusher.Flush()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		stop := time.After(30 * time.Second) // safety net
		for {
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-tick.C:
				if _, err := w.Write([]byte("x")); err != nil {
					return
				}
				flusher.Flush()
			}
		}
	}))

	const timeout = 500 * time.Millisecond
	start := time.Now()
	res := probe(t.Context(), prober, probing.TargetSpec{URL: srv.URL + "/drip", Method: http.MethodGet, Timeout: timeout})
	elapsed := time.Since(start)

	assert.False(t, res.Success)
	assert.Equal(t, probing.ReasonTimeout, res.Reason)
	assert.Equal(t, `Get "`+srv.URL+`/drip": timeout after 500ms`, res.Message)
	assert.Equal(t, 200, res.StatusCode, "the headers were received")
	assert.GreaterOrEqual(t, elapsed, timeout)
	assert.Less(t, elapsed, timeout+slack, "the body read must be cut at the timeout")
}

func TestHTTPProberCancelled(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	srv := startServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := probe(ctx, prober, probing.TargetSpec{URL: srv.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout})
	assert.False(t, res.Success)
	assert.Equal(t, probing.ReasonTimeout, res.Reason)
	assert.Equal(t, `Get "`+srv.URL+`/": probe cancelled: context canceled`, res.Message)
}

// A target that does not validate is not probed: not resolved, not sent.
// Validate's cases are in TestTargetValidate; these are about Probe.
func TestHTTPProberInvalidTarget(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	var hits atomic.Int64
	srv := startServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	valid := func(mutate func(*probing.TargetSpec)) probing.TargetSpec {
		target := probing.TargetSpec{URL: byName(t, srv) + "/", Method: http.MethodGet, Timeout: time.Second}
		mutate(&target)
		return target
	}

	tests := map[string]struct {
		target      probing.TargetSpec
		wantMessage string
	}{
		"unresolved method": {
			target:      valid(func(t *probing.TargetSpec) { t.Method = "" }),
			wantMessage: "invalid target: missing method (expected GET, HEAD, POST, PUT or OPTIONS)",
		},
		"unresolved body match limit": {
			target:      valid(func(t *probing.TargetSpec) { t.BodyMatch = &probing.BodyMatch{Regexp: pattern.MustCompile("ok")} }),
			wantMessage: "invalid target: body match: maxBodyBytes 0 is not between 1 and 1048576",
		},
		"unresolved timeout": {
			target:      valid(func(t *probing.TargetSpec) { t.Timeout = 0 }),
			wantMessage: "invalid target: timeout 0s is not positive",
		},
		"password is not shown": {
			target:      valid(func(t *probing.TargetSpec) { t.URL = "http://user:secret@127.0.0.1:badport/" }),
			wantMessage: `invalid target: URL: invalid port ":badport" after host`,
		},
		"CA without certificates": {
			target:      valid(func(t *probing.TargetSpec) { t.TLS.RootCAs = []byte("not PEM") }),
			wantMessage: "invalid target: TLS settings: the CA bundle holds no PEM-encoded certificate",
		},
		"everything broken": {
			target:      probing.TargetSpec{URL: "%%", Method: "\x00"},
			wantMessage: `invalid target: URL: invalid URL escape "%%"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var res probing.Result
			require.NotPanics(t, func() { res = probe(t.Context(), prober, tc.target) })
			assert.False(t, res.Success)
			assert.Equal(t, probing.ReasonInvalidTarget, res.Reason)
			assert.Zero(t, res.StatusCode)
			assert.Equal(t, tc.wantMessage, res.Message)
			assert.NotContains(t, res.Message, "secret")
		})
	}
	t.Cleanup(func() {
		assert.Zero(t, dns.Queries(), "invalid targets are not resolved")
		assert.Zero(t, hits.Load(), "invalid targets are not sent")
	})
}
