package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/networkio/webchecker/e2e/bench/report"
	"github.com/networkio/webchecker/e2e/framework"
)

// failureSections are the sections of the failure sequence, in order.
var failureSections = []string{
	"failure: partition", "failure: SIGSTOP", "failure: SIGKILL", "failure: SIGTERM",
	"failure: the remaining replicas carry all", "failure: both back",
}

// failures runs the realistic profile's failure sequence. It cuts the
// third replica off from the API server, then freezes the second (see
// isolate), each past its Lease and back. Then it kills the first
// replica with SIGKILL and observes its checkers' gaps until the
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
	if out[failureSections[0]], err = e.isolate(ctx, e.partitioned(), "partition",
		func(*framework.Manager) error { e.partition.Cut(); return nil },
		func(*framework.Manager) error { e.partition.Restore(); return nil }); err != nil {
		return out, err
	}
	if out[failureSections[1]], err = e.isolate(ctx, e.ids[1], "SIGSTOP", (*framework.Manager).Freeze, (*framework.Manager).Thaw); err != nil {
		return out, err
	}
	if out[failureSections[2]], err = e.stopAndObserve(ctx, killed, "SIGKILL", e.opts.promiseKill(), func(m *framework.Manager) error {
		if err := m.Kill(); err != nil {
			return fmt.Errorf("killing %s: %w", killed, err)
		}
		return nil
	}); err != nil {
		return out, err
	}
	if out[failureSections[3]], err = e.stopAndObserve(ctx, termed, "SIGTERM", e.opts.promiseTerm(), func(m *framework.Manager) error {
		if err := m.Terminate(terminateWithin); err != nil {
			return fmt.Errorf("stopping %s with SIGTERM: %w", termed, err)
		}
		return nil
	}); err != nil {
		return out, err
	}
	if out[failureSections[4]], err = e.carried(ctx, "remaining replicas", e.opts.promiseKill()); err != nil {
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
	out[failureSections[5]] = append([]report.Row{
		{Name: "restart until both replicas were ready", Value: ready.Seconds(), Unit: "s"},
	}, rows...)
	return out, err
}

// isolate cuts replica id off with cut, as a partition or a freeze would,
// and observes the gaps of the checkers it had against the crash promise
// (its Lease expires in the meantime, see stopAndObserve). It brings the
// replica back with restore and reports how long until its renewed Lease
// was seen, and how many of its probes the targets received from its
// return until that renewal began: only probes started before the cut may
// arrive then, since it starts none while fenced. (A renewal may begin
// before the return, its request retried until it goes through; nothing
// is counted then.) Once the ring has settled it measures a window, with
// every checker's gap from the cut on against the same promise.
func (e *env) isolate(ctx context.Context, id, how string, cut, restore func(*framework.Manager) error) ([]report.Row, error) {
	promise := e.opts.promiseKill()
	rows, err := e.stopAndObserve(ctx, id, how, promise, cut)
	if err != nil {
		return rows, err
	}
	cutAt := e.marks[len(e.marks)-1].at
	back := time.Now()
	if err := restore(e.managers[id]); err != nil {
		return rows, fmt.Errorf("bringing %s back: %w", id, err)
	}
	renewed, seen, err := e.renewedSince(ctx, id, cutAt, promise)
	if err != nil {
		return rows, err
	}
	early := 0
	for i := range e.size {
		for _, p := range e.targets.probesOf(i) {
			if !p.at.Before(back) && p.at.Before(renewed) && e.targets.shardName(p) == id {
				early++
			}
		}
	}
	rows = append(rows,
		report.Row{Name: how + ": back until its renewed Lease was seen", Value: seen.Sub(back).Seconds(), Unit: "s"},
		report.Row{Name: how + ": its probes received once back, before its renewal began", Value: float64(early), Unit: "probes"},
	)
	// The others see the renewed Lease within a renewal; the hand-back is
	// over within an interval of that.
	if err := sleep(ctx, 2*e.opts.interval+e.opts.renewInterval); err != nil {
		return rows, err
	}
	more, err := e.carried(ctx, "every replica", promise)
	return append(rows, more...), err
}

// renewedSince polls the Lease of replica id, for up to within, until it
// says it was renewed after since, and returns when that renewal began
// (its renewTime) and when the poll saw it.
func (e *env) renewedSince(ctx context.Context, id string, since time.Time, within time.Duration) (renewed, seen time.Time, err error) {
	deadline := time.Now().Add(within)
	for {
		l, err := e.kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, id, metav1.GetOptions{})
		if err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(since) {
			return l.Spec.RenewTime.Time, time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, time.Time{}, fmt.Errorf("the Lease of %s was not renewed within %s of its return (last error: %v)", id, within, err)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return time.Time{}, time.Time{}, err
		}
	}
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
