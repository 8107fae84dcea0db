package framework

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// FleetOptions configure a Fleet.
type FleetOptions struct {
	// Manager is the options every replica starts with; ShardID is set per
	// replica (<Name>-<i>).
	Manager ManagerOptions
	// Name prefixes the replicas' shard ids.
	Name string
	// Replicas is how many manager processes run.
	Replicas int
	// Prometheus is the options of the server that scrapes them; its
	// Targets are set to the replicas' metrics addresses.
	Prometheus PrometheusOptions
}

// Fleet is manager replicas sharing a ring and a real Prometheus server
// scraping them, as the metrics end-to-end tests run them.
type Fleet struct {
	Replicas   []*Manager
	Prometheus *Prometheus
}

// StartFleet starts opts.Replicas managers and a Prometheus server that
// scrapes them. On error, what was started is stopped.
func StartFleet(ctx context.Context, opts FleetOptions) (*Fleet, error) {
	f := &Fleet{}
	for i := range opts.Replicas {
		mopts := opts.Manager
		mopts.ShardID = fmt.Sprintf("%s-%d", opts.Name, i)
		m, err := StartManager(ctx, mopts)
		if err != nil {
			f.Stop()
			return nil, err
		}
		f.Replicas = append(f.Replicas, m)
	}
	popts := opts.Prometheus
	popts.Targets = nil
	for _, m := range f.Replicas {
		popts.Targets = append(popts.Targets, m.MetricsAddr)
	}
	prom, err := StartPrometheus(ctx, popts)
	if err != nil {
		f.Stop()
		return nil, err
	}
	f.Prometheus = prom
	return f, nil
}

// Stop terminates Prometheus and kills the replicas that still run.
func (f *Fleet) Stop() {
	if f.Prometheus != nil {
		_ = f.Prometheus.Terminate(10 * time.Second)
	}
	for _, m := range f.Replicas {
		if !m.Exited() {
			_ = m.Kill()
		}
	}
}

// Logs returns the last lines lines of Prometheus' log and of every
// replica's, for a failed test's output.
func (f *Fleet) Logs(lines int) string {
	var b strings.Builder
	if f.Prometheus != nil {
		fmt.Fprintf(&b, "----- prometheus log -----\n%s\n", lastLines(f.Prometheus.Log(), lines))
	}
	for _, m := range f.Replicas {
		fmt.Fprintf(&b, "----- last lines of manager %s -----\n%s\n", m.Options.ShardID, lastLines(m.Log(), lines))
	}
	return b.String()
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
