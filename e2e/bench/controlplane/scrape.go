package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/networkio/webchecker/e2e/bench/report"
)

// scrapeInterval is how often the bench scrapes every replica's /metrics
// during the steady window, as Prometheus would: twice as often as the
// chart's ServiceMonitor (30 s). A scrape makes the replica write every
// series of the checkers it probes, which costs memory for as long as it
// lasts: the window's RSS includes it.
const scrapeInterval = 15 * time.Second

// scraper scrapes the live replicas' /metrics every interval until stopped.
type scraper struct {
	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}

	mu sync.Mutex
	// per replica: scrapes, the largest body (uncompressed) and the
	// longest scrape.
	count   map[string]int
	bytes   map[string]int64
	longest map[string]time.Duration
	sched   map[string]*schedWindow
	err     error
}

// startScraping scrapes every replica at once, then every interval.
func (e *env) startScraping(ctx context.Context, interval time.Duration) *scraper {
	s := &scraper{stopCh: make(chan struct{}), done: make(chan struct{}),
		count: map[string]int{}, bytes: map[string]int64{}, longest: map[string]time.Duration{}, sched: map[string]*schedWindow{}}
	all := func() {
		for _, id := range e.ids {
			if m := e.managers[id]; m != nil && !m.Exited() {
				s.scrape(ctx, id, "http://"+m.MetricsAddr+"/metrics")
			}
		}
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			all()
			select {
			case <-ctx.Done():
				return
			case <-s.stopCh:
				// The last scrape closes the window of the histograms.
				all()
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// scrapeClient asks for gzip as Prometheus does (the transport decompresses)
// and goes to loopback directly.
var scrapeClient = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}

func (s *scraper) scrape(ctx context.Context, id, url string) {
	start := time.Now()
	n, sample, err := func() (int64, schedSample, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, schedSample{}, err
		}
		req.Header.Set("Accept", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
		resp, err := scrapeClient.Do(req)
		if err != nil {
			return 0, schedSample{}, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, schedSample{}, fmt.Errorf("status %s", resp.Status)
		}
		sample, n, err := parseSched(resp.Body)
		return n, sample, err
	}()
	took := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil && ctx.Err() == nil {
			s.err = fmt.Errorf("scraping %s: %w", id, err)
		}
		return
	}
	s.count[id]++
	s.bytes[id] = max(s.bytes[id], n)
	s.longest[id] = max(s.longest[id], took)
	if s.sched[id] == nil {
		s.sched[id] = &schedWindow{}
	}
	s.sched[id].add(sample)
}

// stop stops scraping, after a last scrape, and returns a row per replica
// and figure, the scheduler's included.
func (s *scraper) stop(ids []string) ([]report.Row, error) {
	s.stopOnce.Do(func() { close(s.stopCh) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	rows := []report.Row{{Name: "scrape interval (every replica's /metrics)", Value: scrapeInterval.Seconds(), Unit: "s"}}
	for _, id := range ids {
		if s.count[id] == 0 {
			continue // not running in this window
		}
		rows = append(rows,
			report.Row{Name: id + " scrapes", Value: float64(s.count[id]), Unit: "scrapes"},
			report.Row{Name: id + " largest scrape", Value: float64(s.bytes[id]) / 1024, Unit: "KiB"},
			report.Row{Name: id + " longest scrape", Value: s.longest[id].Seconds() * 1000, Unit: "ms"})
		if w := s.sched[id]; w != nil {
			rows = append(rows, w.rows(id)...)
		}
	}
	return rows, nil
}
