package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/networkio/webchecker/e2e/bench/report"
	"github.com/networkio/webchecker/e2e/framework"
)

// terminateWithin bounds a replica's graceful shutdown.
const terminateWithin = 30 * time.Second

// handOver stops the first replica with SIGTERM and measures the longest
// probe gap of the checkers it had; it restarts it, lets the ring settle,
// then kills the second replica with SIGKILL and measures the same.
func (e *env) handOver(ctx context.Context) ([]report.Row, error) {
	termed, killed := e.ids[0], e.ids[1]
	rows, err := e.stopAndObserve(ctx, termed, "SIGTERM", e.opts.promiseTerm(), func(m *framework.Manager) error {
		if err := m.Terminate(terminateWithin); err != nil {
			return fmt.Errorf("stopping %s with SIGTERM: %w", termed, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.marks = append(e.marks, mark{"after the restart", time.Now()})
	if err := e.startReplicas(ctx, termed); err != nil {
		return nil, fmt.Errorf("restarting %s: %w", termed, err)
	}
	// The others see the new Lease within a renewal; the hand-over back
	// to it is over within an interval of that.
	if err := sleep(ctx, 2*e.opts.interval+e.opts.renewInterval); err != nil {
		return nil, err
	}
	more, err := e.stopAndObserve(ctx, killed, "SIGKILL", e.opts.promiseKill(), func(m *framework.Manager) error {
		if err := m.Kill(); err != nil {
			return fmt.Errorf("killing %s: %w", killed, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(rows, more...), nil
}

// stopAndObserve stops replica id with stop (or cuts it off: its process
// may go on), waits until promise (and a second) has passed since stop
// returned and returns the rows for the probe gaps of the checkers it had.
func (e *env) stopAndObserve(ctx context.Context, id, how string, promise time.Duration, stop func(*framework.Manager) error) ([]report.Row, error) {
	at := time.Now()
	e.marks = append(e.marks, mark{"after " + how, at})
	owned := e.ownedBy(id, at)
	if err := stop(e.managers[id]); err != nil {
		return nil, err
	}
	exited := time.Since(at)
	// Observed until promise after the process was gone: a replica that
	// goes on probing after SIGTERM until the instant it announced on its
	// Lease (--handover-lead) hands its checkers over only then.
	end := at.Add(exited + promise + time.Second)
	if err := sleep(ctx, time.Until(end)); err != nil {
		return nil, err
	}
	g := e.longestGap(owned, at, end, promise)
	if err := e.writeLog("gaps-"+how, e.longGaps(owned, at, end, promise)); err != nil {
		return nil, err
	}
	rows := []report.Row{{Name: how + ": checkers of the replica", Value: float64(len(owned)), Unit: "checkers"}}
	if e.managers[id].Exited() {
		rows = append(rows, report.Row{Name: how + ": until the process was gone", Value: exited.Seconds(), Unit: "s"})
	}
	return append(rows, []report.Row{
		{Name: how + ": probe gap, median checker", Value: g.median.Seconds(), Unit: "s"},
		{Name: how + ": probe gap, 99th percentile", Value: g.p99.Seconds(), Unit: "s"},
		{Name: how + ": longest probe gap", Value: g.longest.Seconds(), Unit: "s",
			Goal: fmt.Sprintf("<= %s", promise), Met: report.Met(len(owned) > 0 && g.longest <= promise)},
		{Name: how + ": checkers with a longer gap", Value: float64(g.over), Unit: "checkers", Goal: "0", Met: report.Met(g.over == 0)},
	}...), nil
}

// ownedBy returns the checkers whose last probe before at, within an
// interval and a second, came from replica id: those it had.
func (e *env) ownedBy(id string, at time.Time) []int {
	var owned []int
	since := at.Add(-e.opts.interval - time.Second)
	for i := range e.size {
		ps := e.targets.probesOf(i)
		last := -1
		for k, p := range ps {
			if p.at.Before(at) {
				last = k
			}
		}
		if last >= 0 && ps[last].at.After(since) && e.targets.shardName(ps[last]) == id {
			owned = append(owned, i)
		}
	}
	return owned
}

// longGaps lists, for --logs, the checkers with a gap longer than promise
// after at: each with its probes (time and replica) from two intervals
// before at until end.
func (e *env) longGaps(checkers []int, at, end time.Time, promise time.Duration) []string {
	var lines []string
	for _, i := range checkers {
		if e.longestGap([]int{i}, at, end, promise).over == 0 {
			continue
		}
		line := fmt.Sprintf("%s (stop at %s):", nameOf(i), at.Format("15:04:05.000"))
		for _, p := range e.targets.probesOf(i) {
			if p.at.After(at.Add(-2*e.opts.interval)) && !p.at.After(end) {
				line += fmt.Sprintf(" %s@%s", e.targets.shardName(p), p.at.Format("15:04:05.000"))
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// gaps summarises the probe gaps of a set of checkers: the longest gap of
// each, the median and 99th percentile of those, and the longest.
type gaps struct {
	median, p99, longest time.Duration
	// over counts the checkers with a gap longer than the promise.
	over int
}

// longestGap returns, over the checkers, the longest time between two
// probes from the last one before at until end (the time from the last
// probe to end counts as a gap too: a checker nobody took over).
func (e *env) longestGap(checkers []int, at, end time.Time, promise time.Duration) gaps {
	var g gaps
	worstOf := make([]time.Duration, 0, len(checkers))
	for _, i := range checkers {
		worst := time.Duration(0)
		var prev time.Time
		for _, p := range e.targets.probesOf(i) {
			if p.at.After(end) {
				break
			}
			if !prev.IsZero() && !p.at.Before(at) {
				worst = max(worst, p.at.Sub(prev))
			}
			prev = p.at
		}
		if !prev.IsZero() {
			worst = max(worst, end.Sub(prev))
		}
		worstOf = append(worstOf, worst)
		if worst > promise {
			g.over++
		}
	}
	if len(worstOf) > 0 {
		slices.Sort(worstOf)
		g.median = worstOf[len(worstOf)/2]
		g.p99 = worstOf[len(worstOf)*99/100]
		g.longest = worstOf[len(worstOf)-1]
	}
	return g
}

// doubles counts pairs of consecutive probes of one checker less than half
// an interval apart.
type doubles struct {
	pairs, checkers int
	// byPeriod counts the pairs by the period the second probe fell in
	// (see env.marks), and, within it, whether one replica made both.
	byPeriod map[string]*doublesIn
	// lines describe every pair, for the --logs directory.
	lines []string
}

type doublesIn struct{ sameReplica, twoReplicas int }

// doubleProbes counts the double probes over the whole run.
func (e *env) doubleProbes() doubles {
	d := doubles{byPeriod: map[string]*doublesIn{}}
	for i := range e.size {
		ps := e.targets.probesOf(i)
		n := 0
		for k := 1; k < len(ps); k++ {
			if ps[k].at.Sub(ps[k-1].at) >= e.opts.interval/2 {
				continue
			}
			n++
			in := d.byPeriod[e.periodOf(ps[k].at)]
			if in == nil {
				in = &doublesIn{}
				d.byPeriod[e.periodOf(ps[k].at)] = in
			}
			if ps[k].shard == ps[k-1].shard {
				in.sameReplica++
			} else {
				in.twoReplicas++
			}
			d.lines = append(d.lines, fmt.Sprintf("%s c-%d %s %s then %s %s", ps[k-1].at.UTC().Format(time.RFC3339Nano), i,
				e.targets.shardName(ps[k-1]), ps[k].at.Sub(ps[k-1].at).Round(time.Millisecond), e.targets.shardName(ps[k]), e.periodOf(ps[k].at)))
		}
		d.pairs += n
		if n > 0 {
			d.checkers++
		}
	}
	return d
}

// periodOf names the period of the run t falls in.
func (e *env) periodOf(t time.Time) string {
	name := "before any hand-over"
	for _, m := range e.marks {
		if !t.Before(m.at) {
			name = m.name
		}
	}
	return name
}

// rows reports d, the periods in the order of the run.
func (d doubles) rows(marks []mark) []report.Row {
	rows := []report.Row{
		{Name: "double probes (< interval/2 apart), whole run", Value: float64(d.pairs), Unit: "pairs"},
		{Name: "checkers probed twice that close", Value: float64(d.checkers), Unit: "checkers"},
	}
	periods := []string{"before any hand-over"}
	for _, m := range marks {
		periods = append(periods, m.name)
	}
	for _, p := range periods {
		in := d.byPeriod[p]
		if in == nil {
			in = &doublesIn{}
		}
		rows = append(rows,
			report.Row{Name: "double probes " + p + ", one replica", Value: float64(in.sameReplica), Unit: "pairs"},
			report.Row{Name: "double probes " + p + ", two replicas", Value: float64(in.twoReplicas), Unit: "pairs"})
	}
	return rows
}
