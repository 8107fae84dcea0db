package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/networkio/webchecker/e2e/bench/tlsca"
	"github.com/networkio/webchecker/e2e/framework"
)

// targetServers is how many HTTP servers share the checkers: a few ports
// spread the probes' fresh connections over more loopback 4-tuples; as
// many HTTPS servers serve the https checkers, when there are any.
const targetServers = 4

// holdBound bounds how long a target that never answers holds a request
// whose client stays: the API's longest timeout and a margin.
const holdBound = 70 * time.Second

// probe is one request a target received for a checker: when it arrived
// and which replica sent it (an index into targets.shards).
type probe struct {
	at    time.Time
	shard uint8
}

// targetsConfig is what the targets do for each checker.
type targetsConfig struct {
	// kinds is the kind of each checker's target.
	kinds []targetKind
	// delay, when not nil, delays every answer.
	delay *latency
	// ca, when not nil, serves the https targets.
	ca *tlsca.CA
}

// targets are the HTTP servers on 127.0.0.1 that the checkers probe, at
// /c/<index>. They answer 500 for the checkers marked failing and 200 for
// the others, after the configured delay, and never for a checker of
// kindHang; they record every probe of every checker compactly (a
// probetest.Target keeps each request's headers, too much at 10,000
// checkers probed for minutes).
type targets struct {
	servers   []*http.Server
	urls      []string
	httpsURLs []string
	failing   []atomic.Bool
	kinds     []targetKind
	delay     *latency
	// closing is closed when the servers shut down: held requests end.
	closing chan struct{}

	mu     sync.Mutex
	shards []string         // replica ids, by index
	shardN map[string]uint8 // replica id -> index
	probes [][]probe        // per checker, in arrival order
	total  int
	counts []int // per replica, by index
	stray  int   // requests for no checker's path
}

// startTargets starts the servers for the checkers of cfg.
func startTargets(cfg targetsConfig) (*targets, error) {
	n := len(cfg.kinds)
	t := &targets{failing: make([]atomic.Bool, n), probes: make([][]probe, n), shardN: map[string]uint8{},
		kinds: cfg.kinds, delay: cfg.delay, closing: make(chan struct{})}
	for range targetServers {
		u, err := t.listen(nil)
		if err != nil {
			return nil, errors.Join(err, t.close())
		}
		t.urls = append(t.urls, u)
	}
	if cfg.ca == nil {
		return t, nil
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cfg.ca.Serving}, MinVersion: tls.VersionTLS12}
	for range targetServers {
		u, err := t.listen(tc)
		if err != nil {
			return nil, errors.Join(err, t.close())
		}
		t.httpsURLs = append(t.httpsURLs, u)
	}
	return t, nil
}

// listen starts one server on a free port of 127.0.0.1, over TLS with tc,
// and returns its URL.
func (t *targets) listen(tc *tls.Config) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening for a target: %w", err)
	}
	scheme := "http"
	if tc != nil {
		scheme, l = "https", tls.NewListener(l, tc)
	}
	srv := &http.Server{Handler: http.HandlerFunc(t.serve), ReadHeaderTimeout: 10 * time.Second,
		// A replica killed mid-handshake is no news.
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(l) }()
	t.servers = append(t.servers, srv)
	return scheme + "://" + l.Addr().String(), nil
}

// hostOf is spec.host of checker i.
func (t *targets) hostOf(i int) string {
	if t.kinds[i] == kindHTTPS {
		return t.httpsURLs[i%len(t.httpsURLs)]
	}
	return t.urls[i%len(t.urls)]
}

// pathOf is spec.path of checker i.
func pathOf(i int) string { return "/c/" + strconv.Itoa(i) }

// setFailing makes checker i's target answer 500 (true) or 200.
func (t *targets) setFailing(i int, failing bool) { t.failing[i].Store(failing) }

func (t *targets) serve(w http.ResponseWriter, r *http.Request) {
	i, nth, ok := t.record(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	var wait time.Duration
	switch {
	case t.kinds[i] == kindHang:
		wait = holdBound
	case t.delay != nil:
		wait = t.delay.of(i, nth)
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return
		case <-t.closing:
			// Shutting down: drop the connection without an answer.
			panic(http.ErrAbortHandler)
		}
		if t.kinds[i] == kindHang {
			// Held as long as allowed: drop the connection, still
			// without an answer.
			panic(http.ErrAbortHandler)
		}
	}
	if t.failing[i].Load() {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// record records the probe r of a checker and returns the checker's index
// and how many probes it had before; ok is false (and the request counted
// as stray) for no checker's path.
func (t *targets) record(r *http.Request) (i, nth int, ok bool) {
	now := time.Now()
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/c/"))
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil || i < 0 || i >= len(t.probes) || !strings.HasPrefix(r.URL.Path, "/c/") {
		t.stray++
		return 0, 0, false
	}
	shard, known := framework.ShardOfUserAgent(r.UserAgent())
	if !known {
		shard = "?"
	}
	idx, seen := t.shardN[shard]
	if !seen {
		idx = uint8(len(t.shards))
		t.shards = append(t.shards, shard)
		t.shardN[shard] = idx
		t.counts = append(t.counts, 0)
	}
	t.counts[idx]++
	nth = len(t.probes[i])
	t.probes[i] = append(t.probes[i], probe{at: now, shard: idx})
	t.total++
	return i, nth, true
}

// probeCounts are the probes received up to an instant.
type probeCounts struct {
	total   int
	byShard map[string]int
}

// count returns how many probes arrived so far, in all and per replica.
func (t *targets) count() probeCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := probeCounts{total: t.total, byShard: map[string]int{}}
	for i, n := range t.counts {
		c.byShard[t.shards[i]] = n
	}
	return c
}

// probesOf returns a copy of checker i's probes.
func (t *targets) probesOf(i int) []probe {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]probe(nil), t.probes[i]...)
}

// shardName returns the replica id of a probe.
func (t *targets) shardName(p probe) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.shards[p.shard]
}

// strayCount returns how many requests were for no checker's path.
func (t *targets) strayCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stray
}

// close shuts the servers down.
func (t *targets) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	select {
	case <-t.closing:
	default:
		close(t.closing)
	}
	var errs []error
	for _, srv := range t.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, srv.Close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing targets: %w", err)
	}
	return nil
}
