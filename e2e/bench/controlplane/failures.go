package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/networkio/webchecker/e2e/bench/report"
	"github.com/networkio/webchecker/e2e/framework"
)

// failureSections are the sections of the failure sequence, in order.
var failureSections = []string{
	"failure: SIGKILL", "failure: SIGTERM", "failure: the remaining replicas carry all", "failure: both back",
}

// failures runs the realistic profile's failure sequence: it kills the
// first replica with SIGKILL and observes its checkers' gaps until the
// promise has passed (its Lease has expired by then); it stops the second
// with SIGTERM right after and observes the same; it measures a window
// while the remaining replicas (one, of three) carry every checker, with
// every checker's gap against the SIGKILL promise; then it starts both
// back, lets the ring settle and measures a window again, with every
// checker's gap across the hand-back against the SIGTERM promise. It
// returns the rows by section (failureSections).
func (e *env) failures(ctx context.Context) (map[string][]report.Row, error) {
	killed, termed := e.ids[0], e.ids[1]
	out := map[string][]report.Row{}
	var err error
	if out[failureSections[0]], err = e.stopAndObserve(ctx, killed, "SIGKILL", e.opts.promiseKill(), func(m *framework.Manager) error {
		if err := m.Kill(); err != nil {
			return fmt.Errorf("killing %s: %w", killed, err)
		}
		return nil
	}); err != nil {
		return out, err
	}
	if out[failureSections[1]], err = e.stopAndObserve(ctx, termed, "SIGTERM", e.opts.promiseTerm(), func(m *framework.Manager) error {
		if err := m.Terminate(terminateWithin); err != nil {
			return fmt.Errorf("stopping %s with SIGTERM: %w", termed, err)
		}
		return nil
	}); err != nil {
		return out, err
	}
	if out[failureSections[2]], err = e.carried(ctx, "remaining replicas", e.opts.promiseKill()); err != nil {
		return out, err
	}
	restart := time.Now()
	e.marks = append(e.marks, mark{"after the restart", restart})
	if err := e.startReplicas(ctx, killed, termed); err != nil {
		return out, fmt.Errorf("restarting %s and %s: %w", killed, termed, err)
	}
	ready := time.Since(restart)
	// The others see the new Leases within a renewal; the hand-back is
	// over within an interval of that.
	if err := sleep(ctx, 2*e.opts.interval+e.opts.renewInterval); err != nil {
		return out, err
	}
	rows, err := e.carried(ctx, "every replica", e.opts.promiseTerm())
	out[failureSections[3]] = append([]report.Row{
		{Name: "restart until both replicas were ready", Value: ready.Seconds(), Unit: "s"},
	}, rows...)
	return out, err
}

// carried measures a window of the steady window's length (at least an
// interval) and, over every checker, the longest probe gap from the start
// of the phase (the last mark) until the window's end against promise;
// with --logs, the probes of each checker over it (gaps-<who>).
func (e *env) carried(ctx context.Context, who string, promise time.Duration) ([]report.Row, error) {
	from := e.marks[len(e.marks)-1].at
	rows, err := e.window(ctx, max(e.opts.steady, e.opts.interval))
	if err != nil {
		return nil, err
	}
	end := time.Now()
	all := make([]int, e.size)
	for i := range all {
		all[i] = i
	}
	g := e.longestGap(all, from, end, promise)
	if err := e.writeLog("gaps-"+strings.ReplaceAll(who, " ", "-"), e.longGaps(all, from, end, promise)); err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("every checker (%s), since %s: ", who, e.marks[len(e.marks)-1].name)
	return append([]report.Row{
		{Name: prefix + "probe gap, median checker", Value: g.median.Seconds(), Unit: "s"},
		{Name: prefix + "probe gap, 99th percentile", Value: g.p99.Seconds(), Unit: "s"},
		{Name: prefix + "longest probe gap", Value: g.longest.Seconds(), Unit: "s",
			Goal: fmt.Sprintf("<= %s", promise), Met: report.Met(g.longest <= promise)},
		{Name: prefix + "checkers with a longer gap", Value: float64(g.over), Unit: "checkers", Goal: "0", Met: report.Met(g.over == 0)},
	}, rows...), nil
}
