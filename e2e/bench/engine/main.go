// Command engine is the engine benchmark of `make bench`: it measures
// webchecker's HTTP prober and scheduler side by side with the reference
// tools in the same run, prints a table and writes bin/bench/engine.json.
//
// Every section's title or the report's params state its configuration
// (concurrency, target addresses). The phases run one after another,
// never overlapping, against one target server on 127.0.0.1 (and, for the
// spread phase, 127.0.1.x) that runs as a child process (this binary
// re-executed with the hidden "serve" argument), so that its CPU is no
// one's:
//
//  1. the HTTP prober, built as cmd/manager builds it, called back to back
//     by --concurrency goroutines for --duration, over a fresh connection
//     per probe and then with Target.ReuseConnections: probes/s, and
//     probes per CPU-second of this process;
//  2. Debian's prometheus-blackbox-exporter, a child process on a free port
//     of 127.0.0.1, driven over GET /probe by as many goroutines: probes/s
//     with probe_success 1, and probes per CPU-second of the exporter
//     process alone (the driving clients are this process and not counted);
//  3. the HTTP prober over https, a fresh TLS connection per probe, then
//     the exporter's https module in the same configuration, both
//     trusting a CA the bench makes in memory (tlsca);
//  4. probing.NewProber, the prober of every kind cmd/manager uses, with
//     --spread-concurrency (64) probes in flight over --spread-addresses
//     (100) target addresses, 127.0.1.1 onwards (a port each on the same
//     target server), fresh connections, then the exporter given those
//     targets in turn by as many clients: the configuration issue 24
//     measured;
//  5. wrk, keep-alive, with as many connections: requests/s and its CPU;
//  6. a probing/scheduler.Scheduler with the real prober and --checks checks
//     every --interval: its start lag (p50, p99) after the first probes,
//     the probes/s achieved and the CPU per probe.
//
// Every connection is to 127.0.0.0/8 and nothing is looked up in DNS. Every
// child process dies with the bench (Pdeathsig) and is stopped when it
// returns. Without the reference tools the bench fails and says how to
// install them: apt-get install wrk prometheus-blackbox-exporter.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/networkio/webchecker/e2e/bench/report"
	"github.com/networkio/webchecker/e2e/framework"
)

func main() {
	if isServe(os.Args) {
		fmt.Fprintln(os.Stderr, serve())
		os.Exit(1)
	}
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "engine bench:", err)
		os.Exit(1)
	}
}

// run runs the bench with args (without the program name), prints the
// table to stdout and its progress to progress.
func run(ctx context.Context, args []string, stdout, progress io.Writer) error {
	cfg, err := parseConfig(args, progress)
	if err != nil {
		return err
	}
	tl, err := findTools(blackboxBinary, wrkBinary)
	if err != nil {
		return err
	}
	out, err := outDir(cfg.out)
	if err != nil {
		return err
	}
	tgt, err := startTarget(cfg.spreadAddresses)
	if err != nil {
		return err
	}
	defer tgt.stop()

	params := cfg.params()
	tl.addParams(params, cfg)
	params["loadAverageBefore"] = loadAverage()
	rep := report.New("engine", params)
	res, err := runPhases(ctx, cfg, tl, tgt, progress)
	if err != nil {
		return err
	}
	params["loadAverageAfter"] = loadAverage()
	res.offered = float64(cfg.checks) / cfg.interval.Seconds()
	res.addRows(rep, cfg)
	if err := rep.Print(stdout); err != nil {
		return err
	}
	path, err := rep.WriteJSON(out)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nwrote", path)
	return nil
}

// runPhases runs the phases one after another.
func runPhases(ctx context.Context, cfg config, tl tools, tgt *target, progress io.Writer) (results, error) {
	var r results
	var err error
	step := func(name string) { fmt.Fprintf(progress, "engine bench: %s\n", name) }
	step(fmt.Sprintf("prober, fresh connections, %d goroutines, %s", cfg.concurrency, cfg.duration))
	if r.fresh, err = runProber(cfg, tgt, false); err != nil {
		return r, fmt.Errorf("prober, fresh connections: %w", err)
	}
	step("prober, reused connections")
	if r.reuse, err = runProber(cfg, tgt, true); err != nil {
		return r, fmt.Errorf("prober, reused connections: %w", err)
	}
	step("blackbox exporter")
	if r.blackbox, r.blackboxDriverCPU, err = runBlackbox(cfg, tgt, tl.blackbox, blackboxRun{blackboxModule, []string{tgt.url()}, cfg.concurrency}); err != nil {
		return r, fmt.Errorf("blackbox exporter: %w", err)
	}
	step("prober, https, a fresh TLS connection per probe")
	if r.tlsProber, err = runProberTLS(cfg, tgt); err != nil {
		return r, fmt.Errorf("prober, https: %w", err)
	}
	step("blackbox exporter, https")
	if r.tlsBlackbox, _, err = runBlackbox(cfg, tgt, tl.blackbox, blackboxRun{blackboxHTTPSModule, []string{tgt.tlsURL()}, cfg.concurrency}); err != nil {
		return r, fmt.Errorf("blackbox exporter, https: %w", err)
	}
	step(fmt.Sprintf("probing.NewProber, %d in flight over %d addresses", cfg.spreadConcurrency, cfg.spreadAddresses))
	if r.spreadProber, err = runSpread(cfg, tgt); err != nil {
		return r, fmt.Errorf("prober over %d addresses: %w", cfg.spreadAddresses, err)
	}
	step(fmt.Sprintf("blackbox exporter, %d in flight over %d addresses", cfg.spreadConcurrency, cfg.spreadAddresses))
	if r.spreadBlackbox, _, err = runBlackbox(cfg, tgt, tl.blackbox, blackboxRun{blackboxModule, tgt.spreadURLs(), cfg.spreadConcurrency}); err != nil {
		return r, fmt.Errorf("blackbox exporter over %d addresses: %w", cfg.spreadAddresses, err)
	}
	step("wrk")
	if r.wrk, err = runWrk(cfg, tgt, tl.wrk); err != nil {
		return r, fmt.Errorf("wrk: %w", err)
	}
	step(fmt.Sprintf("scheduler, %d checks every %s, for %s", cfg.checks, cfg.interval, cfg.interval*7/2))
	if r.schedule, err = runSchedule(ctx, cfg, tgt); err != nil {
		return r, fmt.Errorf("scheduler: %w", err)
	}
	return r, nil
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, which say
// how much other work shared the CPUs with the bench.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown: " + err.Error()
	}
	fields := strings.Fields(string(data))
	return strings.Join(fields[:min(3, len(fields))], " ")
}

// outDir is dir, or bin/bench under the repository root when dir is empty.
func outDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("choosing the output directory (or give --out): %w", err)
	}
	return filepath.Join(root, "bin", "bench"), nil
}
