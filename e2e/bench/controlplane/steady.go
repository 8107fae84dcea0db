package main

import (
	"context"
	"fmt"
	"time"

	"github.com/networkio/webchecker/e2e/bench/procstat"
	"github.com/networkio/webchecker/e2e/bench/report"
)

const mib = 1 << 20

// rssGoal is the memory goal per replica at 10,000 checkers.
const rssGoal = 80 * mib

// goalSize is the size the absolute goals (convergence time, memory) are
// set for.
const goalSize = 10000

// snapshot is what the bench reads at each end of a window.
type snapshot struct {
	at     time.Time
	api    apiCounts
	procs  map[string]procstat.Sample
	probes probeCounts
}

// take reads the API server's counters, the live replicas' CPU and memory
// and the probes so far.
func (e *env) take(ctx context.Context) (snapshot, error) {
	s := snapshot{procs: map[string]procstat.Sample{}}
	var err error
	if s.api, err = e.readAPICounts(ctx); err != nil {
		return snapshot{}, err
	}
	for _, id := range e.ids {
		if m := e.managers[id]; m != nil && !m.Exited() {
			if s.procs[id], err = procstat.Read(m.Pid()); err != nil {
				return snapshot{}, fmt.Errorf("reading %s: %w", id, err)
			}
		}
	}
	s.probes = e.targets.count()
	s.at = time.Now()
	return s, nil
}

// steady measures the steady window: status writes, API requests, probes,
// and each replica's memory and CPU, while every replica is scraped as
// Prometheus would (see scrapeInterval).
func (e *env) steady(ctx context.Context) ([]report.Row, error) {
	before, err := e.take(ctx)
	if err != nil {
		return nil, err
	}
	scraping := e.startScraping(ctx, scrapeInterval)
	maxRSS, err := e.watchRSS(ctx, e.opts.steady)
	scrapeRows, scrapeErr := scraping.stop(e.ids)
	if err != nil {
		return nil, err
	}
	if scrapeErr != nil {
		return nil, scrapeErr
	}
	after, err := e.take(ctx)
	if err != nil {
		return nil, err
	}
	secs := after.at.Sub(before.at).Seconds()
	api := after.api.sub(before.api)
	modified := e.modifiedBetween(before.at, after.at)
	probes := after.probes.total - before.probes.total
	rows := []report.Row{
		{Name: "window", Value: secs, Unit: "s"},
		{Name: "status writes (API server)", Value: api.statusWrites, Unit: "writes", Goal: "0", Met: report.Met(api.statusWrites == 0)},
		{Name: "status writes (watch MODIFIED)", Value: float64(modified), Unit: "events", Goal: "0", Met: report.Met(modified == 0)},
		{Name: "API requests", Value: api.requests / secs, Unit: "req/s"},
		{Name: "probes at the targets", Value: float64(probes) / secs, Unit: "probes/s"},
		{Name: "probes expected (size / interval)", Value: float64(e.size) / e.opts.interval.Seconds(), Unit: "probes/s"},
	}
	for _, id := range e.ids {
		rows = append(rows, e.replicaRows(id, before, after, max(maxRSS[id], after.procs[id].RSS))...)
	}
	return append(rows, scrapeRows...), nil
}

// watchRSS samples the live replicas' RSS every second for d and returns
// the most each had.
func (e *env) watchRSS(ctx context.Context, d time.Duration) (map[string]uint64, error) {
	most := map[string]uint64{}
	end := time.Now().Add(d)
	for {
		for _, id := range e.ids {
			if m := e.managers[id]; m != nil && !m.Exited() {
				s, err := procstat.Read(m.Pid())
				if err != nil {
					return nil, fmt.Errorf("reading %s: %w", id, err)
				}
				most[id] = max(most[id], s.RSS)
			}
		}
		left := time.Until(end)
		if left <= 0 {
			return most, nil
		}
		if err := sleep(ctx, min(left, time.Second)); err != nil {
			return nil, err
		}
	}
}

// replicaRows are one replica's memory and CPU over the window; maxRSS is
// the most RSS it had in the window.
func (e *env) replicaRows(id string, before, after snapshot, maxRSS uint64) []report.Row {
	b, a := before.procs[id], after.procs[id]
	cpu := a.CPUSince(b)
	probes := after.probes.byShard[id] - before.probes.byShard[id]
	rss := report.Row{Name: id + " RSS (most in the window)", Value: float64(maxRSS) / mib, Unit: "MiB"}
	// The kernel records the high-water mark only on some paths (unmapping
	// pages), not when reclaim evicts some (the binary's file pages, under
	// memory pressure), and its per-CPU RSS counters are approximate:
	// VmHWM read at the end was seen below an RSS sampled before (by 12 KiB).
	peakRSS := max(a.PeakRSS, maxRSS)
	peak := report.Row{Name: id + " peak RSS (VmHWM, since start)", Value: float64(peakRSS) / mib, Unit: "MiB"}
	if e.size >= goalSize {
		rss.Goal, rss.Met = "<= 80 MiB", report.Met(maxRSS <= rssGoal)
		peak.Goal, peak.Met = "<= 80 MiB", report.Met(peakRSS <= rssGoal)
	}
	perProbe := 0.0
	if probes > 0 {
		perProbe = float64(cpu.Microseconds()) / float64(probes)
	}
	return []report.Row{
		rss, peak,
		{Name: id + " CPU", Value: cpu.Seconds(), Unit: "CPU-s"},
		{Name: id + " probes", Value: float64(probes) / after.at.Sub(before.at).Seconds(), Unit: "probes/s"},
		{Name: id + " CPU per probe", Value: perProbe, Unit: "µs"},
	}
}
