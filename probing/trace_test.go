package probing_test

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
)

// TestHTTPProberPhases checks which phases a probe reports and that the
// server's delays land in the right one. Delays are lower bounds only: the
// machine may be slow, never fast.
func TestHTTPProberPhases(t *testing.T) {
	t.Parallel()
	const delay = 50 * time.Millisecond
	dns := newDNS(t)

	mux := http.NewServeMux()
	mux.HandleFunc("/think", func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(delay)
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "first part")
		w.(http.Flusher).Flush()
		time.Sleep(delay)
		_, _ = io.WriteString(w, "second part")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/think", http.StatusFound)
	})
	srv := startServer(t, mux)
	tlsSrv := httptest.NewUnstartedServer(mux)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake fails on purpose
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)

	tests := map[string]struct {
		url        string
		wantPhases []probing.Phase
		// atLeast maps a phase to a lower bound of its duration.
		atLeast map[probing.Phase]time.Duration
	}{
		"IP literal: no DNS": {
			url:        srv.URL + "/think",
			wantPhases: []probing.Phase{probing.PhaseConnect, probing.PhaseProcessing, probing.PhaseTransfer},
			atLeast:    map[probing.Phase]time.Duration{probing.PhaseProcessing: delay},
		},
		"host name: DNS first": {
			url:        byName(t, srv) + "/think",
			wantPhases: []probing.Phase{probing.PhaseDNS, probing.PhaseConnect, probing.PhaseProcessing, probing.PhaseTransfer},
			atLeast:    map[probing.Phase]time.Duration{probing.PhaseProcessing: delay},
		},
		"slow body: transfer": {
			url:        srv.URL + "/trickle",
			wantPhases: []probing.Phase{probing.PhaseConnect, probing.PhaseProcessing, probing.PhaseTransfer},
			atLeast:    map[probing.Phase]time.Duration{probing.PhaseTransfer: delay},
		},
		"redirect: summed over the hops": {
			url:        srv.URL + "/redirect",
			wantPhases: []probing.Phase{probing.PhaseConnect, probing.PhaseProcessing, probing.PhaseTransfer},
			atLeast:    map[probing.Phase]time.Duration{probing.PhaseProcessing: delay},
		},
		"untrusted certificate: TLS measured, nothing after it": {
			url:        tlsSrv.URL + "/think",
			wantPhases: []probing.Phase{probing.PhaseConnect, probing.PhaseTLS},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prober := newProber(t, dns, probing.ProberOptions{})
			res := probe(t.Context(), prober, probing.TargetSpec{URL: tc.url, Method: http.MethodGet, Timeout: relaxedTimeout, FollowRedirects: true})
			assert.Equal(t, tc.wantPhases, res.Phases.Happened(), "%+v", res)
			var sum time.Duration
			for phase, d := range res.Phases.All() {
				assert.Positive(t, d, phase)
				sum += d
			}
			assert.LessOrEqual(t, sum, res.Duration, "phases are parts of the probe")
			for phase, min := range tc.atLeast {
				d, ok := res.Phases.Get(phase)
				assert.True(t, ok, phase)
				// The client's clock starts a phase when its trace hook
				// runs, which on loaded cores can be after the server has
				// started its delay: allow a little of it to be missed.
				assert.GreaterOrEqual(t, d, min-min/5, phase)
			}
		})
	}
}

// TestHTTPProberPhasesKeepAlive checks that a probe over a kept-alive
// connection (ReuseConnections) reports neither DNS nor connect.
func TestHTTPProberPhasesKeepAlive(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newProber(t, dns, probing.ProberOptions{})
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))

	target := probing.TargetSpec{URL: byName(t, srv) + "/", Method: http.MethodGet, Timeout: relaxedTimeout, ReuseConnections: true}
	first := probe(t.Context(), prober, target)
	require.True(t, first.Success, "%+v", first)
	require.Contains(t, first.Phases.Happened(), probing.PhaseConnect)

	second := probe(t.Context(), prober, target)
	require.True(t, second.Success, "%+v", second)
	assert.Equal(t, []probing.Phase{probing.PhaseProcessing, probing.PhaseTransfer}, second.Phases.Happened())
}
