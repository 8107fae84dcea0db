package main

import (
	"context"
	"fmt"
	"time"

	"github.com/networkio/webchecker/e2e/bench/procstat"
	"github.com/networkio/webchecker/e2e/bench/report"
)

const mib = 1 << 20

// goals are the absolute goals of a size: convergence after the last
// create and memory per replica.
type goals struct {
	converge time.Duration
	rss      uint64
}

// goalsFor returns the goals of size checkers, and false when none is
// set below 10,000: 30 s and 80 MiB at 10,000 (issue 24's first goals),
// 60 s and 200 MiB from 100,000 (its item 3).
func goalsFor(size int) (goals, bool) {
	switch {
	case size >= 100000:
		return goals{converge: 60 * time.Second, rss: 200 * mib}, true
	case size >= 10000:
		return goals{converge: 30 * time.Second, rss: 80 * mib}, true
	}
	return goals{}, false
}

// controlPlaneProcs are the processes of the control plane the bench
// measures, by the command name their child process has.
var controlPlaneProcs = []string{"kube-apiserver", "etcd"}

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
	for name, pid := range e.cpPids {
		if s.procs[name], err = procstat.Read(pid); err != nil {
			return snapshot{}, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	s.probes = e.targets.count()
	s.at = time.Now()
	return s, nil
}

// steady measures the steady window (see window).
func (e *env) steady(ctx context.Context) ([]report.Row, error) {
	return e.window(ctx, e.opts.steady)
}

// window measures a window of d: status writes, API requests, probes,
// each live replica's memory, CPU and scheduler, and the API server's and
// etcd's CPU and memory, while every replica is scraped as Prometheus
// would (see scrapeInterval).
func (e *env) window(ctx context.Context, d time.Duration) ([]report.Row, error) {
	before, err := e.take(ctx)
	if err != nil {
		return nil, err
	}
	scraping := e.startScraping(ctx, scrapeInterval)
	maxRSS, err := e.watchRSS(ctx, d)
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
		{Name: "status writes per minute (API server)", Value: api.statusWrites * 60 / secs, Unit: "writes/min"},
		{Name: "API requests", Value: api.requests / secs, Unit: "req/s"},
		{Name: "probes at the targets", Value: float64(probes) / secs, Unit: "probes/s"},
		{Name: "probes expected (size / interval)", Value: float64(e.size) / e.opts.interval.Seconds(), Unit: "probes/s"},
	}
	for _, id := range e.ids {
		if _, live := after.procs[id]; live {
			rows = append(rows, e.replicaRows(id, before, after, max(maxRSS[id], after.procs[id].RSS))...)
		}
	}
	for _, name := range controlPlaneProcs {
		cpu := after.procs[name].CPUSince(before.procs[name])
		rows = append(rows,
			report.Row{Name: name + " CPU", Value: cpu.Seconds() / secs, Unit: "cores"},
			report.Row{Name: name + " RSS (most in the window)", Value: float64(max(maxRSS[name], after.procs[name].RSS)) / mib, Unit: "MiB"})
	}
	return append(rows, scrapeRows...), nil
}

// watchRSS samples the live replicas' and the control plane's RSS every
// second for d and returns the most each had.
func (e *env) watchRSS(ctx context.Context, d time.Duration) (map[string]uint64, error) {
	most := map[string]uint64{}
	end := time.Now().Add(d)
	for {
		pids := map[string]int{}
		for _, id := range e.ids {
			if m := e.managers[id]; m != nil && !m.Exited() {
				pids[id] = m.Pid()
			}
		}
		for name, pid := range e.cpPids {
			pids[name] = pid
		}
		for name, pid := range pids {
			s, err := procstat.Read(pid)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", name, err)
			}
			most[name] = max(most[name], s.RSS)
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
	if g, ok := goalsFor(e.size); ok {
		goal := fmt.Sprintf("<= %d MiB", g.rss/mib)
		rss.Goal, rss.Met = goal, report.Met(maxRSS <= g.rss)
		peak.Goal, peak.Met = goal, report.Met(peakRSS <= g.rss)
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
