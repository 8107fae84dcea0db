package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// config is the bench's command line. defaultConfig and smokeConfig hold
// every default in one place.
type config struct {
	// duration is the length of each load phase (prober fresh, prober
	// reuse, blackbox exporter, wrk).
	duration time.Duration
	// concurrency is the number of goroutines (or wrk connections) that
	// send probes or requests back to back.
	concurrency int
	// spreadConcurrency and spreadAddresses size the spread phase: the
	// prober of every kind with that many probes in flight over that many
	// target addresses.
	spreadConcurrency, spreadAddresses int
	// checks and interval size the scheduler phase.
	checks   int
	interval time.Duration
	// out is the directory of engine.json; empty means bin/bench under the
	// repository root.
	out string
	// smoke shrinks every size so that the whole run takes seconds.
	smoke bool
}

func defaultConfig() config {
	return config{duration: 10 * time.Second, concurrency: 32, spreadConcurrency: 64, spreadAddresses: 100, checks: 10_000, interval: 10 * time.Second}
}

// smokeConfig is what --smoke sets, unless given explicitly.
func smokeConfig() config {
	// A 2 s interval gives the probes a 1 s timeout: on a loaded machine
	// a fresh TLS handshake among 32 can take more than 500 ms.
	return config{duration: time.Second, concurrency: 32, checks: 200, interval: 2 * time.Second}
}

// parseConfig parses args (without the program name).
func parseConfig(args []string, output io.Writer) (config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("engine", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.DurationVar(&cfg.duration, "duration", cfg.duration, "Length of each load phase: prober with fresh connections, prober reusing connections, blackbox exporter, wrk (whole seconds for wrk).")
	fs.IntVar(&cfg.concurrency, "concurrency", cfg.concurrency, "Goroutines calling the prober (or the exporter) back to back, and wrk's connections.")
	fs.IntVar(&cfg.spreadConcurrency, "spread-concurrency", cfg.spreadConcurrency, "Probes in flight of the spread phase (the prober of every kind, and the exporter beside it).")
	fs.IntVar(&cfg.spreadAddresses, "spread-addresses", cfg.spreadAddresses, fmt.Sprintf("Target addresses of the spread phase, 127.0.1.1 onwards (at most %d).", maxSpread))
	fs.IntVar(&cfg.checks, "checks", cfg.checks, "Checks of the scheduler phase.")
	fs.DurationVar(&cfg.interval, "interval", cfg.interval, "Probe interval of the scheduler phase's checks, at least 1s; the phase lasts 3.5 intervals.")
	fs.StringVar(&cfg.out, "out", cfg.out, "Directory of engine.json (default bin/bench under the repository root).")
	fs.BoolVar(&cfg.smoke, "smoke", cfg.smoke, "Tiny sizes (1s phases, 200 checks every 2s) so that the whole run takes a few seconds; explicit flags still apply.")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.smoke {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		smoke := smokeConfig()
		if !set["duration"] {
			cfg.duration = smoke.duration
		}
		if !set["checks"] {
			cfg.checks = smoke.checks
		}
		if !set["interval"] {
			cfg.interval = smoke.interval
		}
	}
	return cfg, cfg.validate()
}

func (c config) validate() error {
	var errs []error
	if c.duration < time.Second {
		errs = append(errs, fmt.Errorf("--duration %s must be at least 1s", c.duration))
	}
	if c.concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d must be at least 1", c.concurrency))
	}
	if c.spreadConcurrency < 1 || c.spreadAddresses < 1 || c.spreadAddresses > maxSpread {
		errs = append(errs, fmt.Errorf("--spread-concurrency %d and --spread-addresses %d: at least 1, and at most %d addresses", c.spreadConcurrency, c.spreadAddresses, maxSpread))
	}
	if c.checks < 1 {
		errs = append(errs, fmt.Errorf("--checks %d must be at least 1", c.checks))
	}
	if c.interval < time.Second {
		errs = append(errs, fmt.Errorf("--interval %s must be at least 1s (the API's minimum)", c.interval))
	}
	return errors.Join(errs...)
}

// params are the run's parameters as the report lists them.
func (c config) params() map[string]any {
	return map[string]any{
		"duration":          c.duration.String(),
		"concurrency":       c.concurrency,
		"targetAddresses":   "1 (127.0.0.1, one port for http, one for https) in every phase but the spread one",
		"spreadConcurrency": c.spreadConcurrency,
		"spreadAddresses":   fmt.Sprintf("%d (%s, a port each)", c.spreadAddresses, spreadRange(c.spreadAddresses)),
		"checks":            c.checks,
		"interval":          c.interval.String(),
		"probeTimeout":      probeTimeout(c.interval).String(),
		"smoke":             c.smoke,
		"offeredProbesPerS": float64(c.checks) / c.interval.Seconds(),
	}
}

// spreadRange names the spread phase's addresses.
func spreadRange(n int) string {
	if n == 1 {
		return "127.0.1.1"
	}
	return fmt.Sprintf("127.0.1.1-127.0.1.%d", n)
}
