package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/networkio/webchecker/e2e/framework"
)

// targetServers is how many HTTP servers share the checkers: a few ports
// spread the probes' fresh connections over more loopback 4-tuples.
const targetServers = 4

// probe is one request a target received for a checker: when it arrived
// and which replica sent it (an index into targets.shards).
type probe struct {
	at    time.Time
	shard uint8
}

// targets are the HTTP servers on 127.0.0.1 that the checkers probe, at
// /c/<index>. They answer 500 for the checkers marked failing and 200 for
// the others, and record every probe of every checker compactly (a
// probetest.Target keeps each request's headers, too much at 10,000
// checkers probed for minutes).
type targets struct {
	servers []*http.Server
	urls    []string
	failing []atomic.Bool

	mu     sync.Mutex
	shards []string         // replica ids, by index
	shardN map[string]uint8 // replica id -> index
	probes [][]probe        // per checker, in arrival order
	total  int
	counts []int // per replica, by index
	stray  int   // requests for no checker's path
}

// startTargets starts the servers for n checkers.
func startTargets(n int) (*targets, error) {
	t := &targets{failing: make([]atomic.Bool, n), probes: make([][]probe, n), shardN: map[string]uint8{}}
	for range targetServers {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.close()
			return nil, fmt.Errorf("listening for a target: %w", err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(t.serve), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		t.servers = append(t.servers, srv)
		t.urls = append(t.urls, "http://"+l.Addr().String())
	}
	return t, nil
}

// hostOf is spec.host of checker i.
func (t *targets) hostOf(i int) string { return t.urls[i%len(t.urls)] }

// pathOf is spec.path of checker i.
func pathOf(i int) string { return "/c/" + strconv.Itoa(i) }

// setFailing makes checker i's target answer 500 (true) or 200.
func (t *targets) setFailing(i int, failing bool) { t.failing[i].Store(failing) }

func (t *targets) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/c/"))
	if err != nil || i < 0 || i >= len(t.probes) || !strings.HasPrefix(r.URL.Path, "/c/") {
		t.mu.Lock()
		t.stray++
		t.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	shard, ok := framework.ShardOfUserAgent(r.UserAgent())
	if !ok {
		shard = "?"
	}
	t.mu.Lock()
	idx, known := t.shardN[shard]
	if !known {
		idx = uint8(len(t.shards))
		t.shards = append(t.shards, shard)
		t.shardN[shard] = idx
		t.counts = append(t.counts, 0)
	}
	t.counts[idx]++
	t.probes[i] = append(t.probes[i], probe{at: now, shard: idx})
	t.total++
	t.mu.Unlock()
	if t.failing[i].Load() {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
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
