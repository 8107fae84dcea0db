package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/e2e/bench/procstat"
	"github.com/networkio/webchecker/probing/scheduler"
)

// scheduleNamespaces is the number of namespaces the checks are spread
// over, so that the scheduler's per-namespace share of the workers (half of
// them by default) does not bind as it would with one namespace.
const scheduleNamespaces = 10

// lagObserver records the start lag of every probe but the first of each
// check (the first probes come in a burst, spread only by the initial
// jitter), and counts the probes that finish while it is measuring.
type lagObserver struct {
	index  map[types.NamespacedName]int // read-only once probing starts
	starts []atomic.Int32

	measuring        atomic.Bool
	finished, failed atomic.Int64

	mu   sync.Mutex
	lags []time.Duration
}

func newLagObserver(checks []scheduler.Check) *lagObserver {
	o := &lagObserver{index: make(map[types.NamespacedName]int, len(checks)), starts: make([]atomic.Int32, len(checks))}
	for i, c := range checks {
		o.index[c.Key] = i
	}
	return o
}

// ProbeStarted implements scheduler.Observer.
func (o *lagObserver) ProbeStarted(key types.NamespacedName, lag time.Duration) {
	if o.starts[o.index[key]].Add(1) == 1 {
		return
	}
	o.mu.Lock()
	o.lags = append(o.lags, lag)
	o.mu.Unlock()
}

// ProbeFinished implements scheduler.Observer.
func (o *lagObserver) ProbeFinished(out scheduler.Outcome) {
	res := out.Result
	if !o.measuring.Load() {
		return
	}
	o.finished.Add(1)
	if !res.Success {
		o.failed.Add(1)
	}
}

// scheduleResult is what the scheduler phase measured.
type scheduleResult struct {
	// probes and failed count the probes finished in the measured window,
	// wall its length, cpu this process's CPU time over it.
	probes, failed int64
	wall, cpu      time.Duration
	target         targetLoad
	// lags are the sorted start lags of every probe but each check's
	// first, from the start of the phase to the end of the window.
	lags []time.Duration
}

// runSchedule runs a Scheduler with the manager's prober and default
// options over cfg.checks checks of the target, each every cfg.interval
// over a fresh connection. After 1.5 intervals, when every check has had
// its first probe and is on its grid, it measures for two intervals.
func runSchedule(ctx context.Context, cfg config, tgt *target) (scheduleResult, error) {
	p, err := newManagerProber()
	if err != nil {
		return scheduleResult{}, err
	}
	checks := make([]scheduler.Check, cfg.checks)
	for i := range checks {
		ns := fmt.Sprintf("bench-%d", i%scheduleNamespaces)
		if checks[i], err = checkFor(ns, fmt.Sprintf("check-%d", i), tgt.url(), cfg.interval, false, nil); err != nil {
			return scheduleResult{}, err
		}
	}
	obs := newLagObserver(checks)
	s, err := scheduler.New(scheduler.Options{Prober: p, Observer: obs})
	if err != nil {
		return scheduleResult{}, fmt.Errorf("creating the scheduler: %w", err)
	}
	for _, c := range checks {
		s.Upsert(c)
	}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- s.Start(ctx) }()
	r, err := measureSchedule(cfg, tgt, obs)
	cancel()
	if startErr := <-stopped; err == nil && startErr != nil {
		err = fmt.Errorf("running the scheduler: %w", startErr)
	}
	return r, err
}

// measureSchedule waits out 1.5 intervals, then measures for 2.
func measureSchedule(cfg config, tgt *target, obs *lagObserver) (scheduleResult, error) {
	time.Sleep(cfg.interval * 3 / 2)
	m, err := startMeter(tgt, procstat.Self)
	if err != nil {
		return scheduleResult{}, err
	}
	obs.measuring.Store(true)
	time.Sleep(2 * cfg.interval)
	obs.measuring.Store(false)
	u, err := m.stop()
	if err != nil {
		return scheduleResult{}, err
	}
	obs.mu.Lock()
	lags := slices.Clone(obs.lags)
	obs.mu.Unlock()
	slices.Sort(lags)
	return scheduleResult{probes: obs.finished.Load(), failed: obs.failed.Load(), wall: u.wall, cpu: u.cpu[0], target: u.target, lags: lags}, nil
}

// percentile is the q-quantile (0 < q <= 1) of sorted by the nearest-rank
// method; 0 when sorted is empty.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
