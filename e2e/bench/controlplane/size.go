package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/networkio/webchecker/e2e/bench/report"
)

// runSize measures one size on a fresh control plane and adds its sections
// to rep; handOver adds the hand-over. It logs its progress to log.
func runSize(ctx context.Context, o *options, size int, handOver bool, rep *report.Report, log io.Writer) (err error) {
	started := time.Now()
	title := func(what string) string { return fmt.Sprintf("%d checkers: %s", size, what) }
	step := func(what string) {
		fmt.Fprintf(log, "[%s] %d checkers: %s\n", time.Now().UTC().Format("15:04:05"), size, what)
	}
	step("starting the control plane and the replicas")
	e, err := startEnv(ctx, o, size)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.close(err != nil)) }()

	step("creating the checkers")
	rows, err := e.converge(ctx)
	if len(rows) > 0 {
		rep.Add(title("creation and first status"), rows...)
	}
	if err != nil {
		return err
	}

	// Let the last writes land (a checker whose first probe came after
	// its Pending grace is written twice) before the steady window.
	if err := sleep(ctx, e.opts.interval); err != nil {
		return err
	}
	step("steady window")
	if rows, err = e.steady(ctx); err != nil {
		return err
	}
	rep.Add(title("steady window"), rows...)

	step(fmt.Sprintf("flipping %d %% of the healthy targets to 500", 100/e.opts.flipEvery))
	if rows, err = e.flip(ctx); err != nil {
		return err
	}
	rep.Add(title("flip"), rows...)

	if handOver {
		if err := e.stopReplicas(ctx, rep, title, step); err != nil {
			return err
		}
	}
	doubled := e.doubleProbes()
	if err := e.writeLog("doubles", doubled.lines); err != nil {
		return err
	}
	api, err := e.readAPICounts(ctx)
	if err != nil {
		return err
	}
	rep.Add(title("correctness and run"), append(doubled.rows(e.marks),
		report.Row{Name: "requests for no checker's path", Value: float64(e.targets.strayCount()), Unit: "requests", Goal: "0", Met: report.Met(e.targets.strayCount() == 0)},
		report.Row{Name: "watch interruptions", Value: float64(len(e.rec.Errors())), Unit: "errors"},
		e.leaseFlowRow(api),
		report.Row{Name: "requests rejected by API Priority and Fairness, whole run", Value: api.rejected, Unit: "requests"},
		report.Row{Name: "bench time for this size", Value: time.Since(started).Seconds(), Unit: "s"})...)
	step(fmt.Sprintf("done in %s", time.Since(started).Round(time.Second)))
	return nil
}

// leaseFlowRow counts the Lease requests the replicas' FlowSchema put in
// the leader-election priority level; with --admin there are none (the
// admin is exempt).
func (e *env) leaseFlowRow(api apiCounts) report.Row {
	row := report.Row{Name: "Lease requests in the leader-election priority level, whole run", Value: api.leaseFlow, Unit: "requests"}
	if !e.opts.admin {
		row.Goal, row.Met = "> 0", report.Met(api.leaseFlow > 0)
	}
	return row
}

// stopReplicas runs the hand-over (instant profile) or the failure
// sequence (realistic) and adds its sections to rep, those measured
// before an error too.
func (e *env) stopReplicas(ctx context.Context, rep *report.Report, title func(string) string, step func(string)) error {
	if e.opts.profile != profileRealistic {
		step("hand-over: SIGTERM, restart, SIGKILL")
		rows, err := e.handOver(ctx)
		if err != nil {
			return err
		}
		rep.Add(title("hand-over"), rows...)
		return nil
	}
	step("failure sequence: partition, SIGSTOP, SIGKILL, SIGTERM, the rest carry all, both back")
	sections, err := e.failures(ctx)
	for _, s := range failureSections {
		if rows, ok := sections[s]; ok {
			rep.Add(title(s), rows...)
		}
	}
	return err
}

// converge creates the checkers and waits until each shows its Ready
// status. When the wait gives up it returns, with the error, rows that say
// how far it got.
func (e *env) converge(ctx context.Context) ([]report.Row, error) {
	created, err := e.createCheckers(ctx)
	if err != nil {
		return nil, err
	}
	rows := []report.Row{
		{Name: "checkers", Value: float64(e.size), Unit: "checkers"},
		{Name: "failing from the start", Value: float64(e.size - e.healthyCount()), Unit: "checkers"},
		{Name: "over https", Value: float64(e.countKind(kindHTTPS)), Unit: "checkers"},
		{Name: "at a path that never answers", Value: float64(e.countKind(kindHang)), Unit: "checkers"},
		{Name: "creation", Value: created.took().Seconds(), Unit: "s"},
		{Name: "creation rate", Value: float64(e.size) / created.took().Seconds(), Unit: "creates/s"},
	}
	reflected, err := e.reflect(ctx, e.want())
	if err != nil {
		return append(rows, report.Row{Name: "checkers showing their Ready status when the wait gave up",
				Value: float64(len(reflected.matching)), Unit: "checkers", Goal: fmt.Sprintf("= %d", e.size), Met: report.Met(false)}),
			fmt.Errorf("waiting for every Ready condition: %w", err)
	}
	at, _ := reflected.done()
	afterLast := report.Row{Name: "all Ready reflect the targets, after the last create", Value: at.Sub(created.last).Seconds(), Unit: "s"}
	if g, ok := goalsFor(e.size); ok {
		afterLast.Goal, afterLast.Met = fmt.Sprintf("<= %s", g.converge), report.Met(at.Sub(created.last) <= g.converge)
	}
	rows = append(rows,
		report.Row{Name: "all Ready reflect the targets, after the first create", Value: at.Sub(created.first).Seconds(), Unit: "s"},
		afterLast)
	return append(rows, e.lastReadyRows(reflected, created.last)...), nil
}

func (e *env) healthyCount() int {
	n := 0
	for _, ok := range e.healthy {
		if ok {
			n++
		}
	}
	return n
}

// countKind counts the checkers whose target is of kind k.
func (e *env) countKind(k targetKind) int {
	n := 0
	for i := range e.size {
		if e.opts.kindOf(i) == k {
			n++
		}
	}
	return n
}
