package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/networkio/webchecker/e2e/framework"
)

// options are the run's parameters: the flags and what follows from them.
type options struct {
	// sizes are the numbers of checkers, one fresh control plane each.
	sizes []int
	// steady is the window over which the steady state is measured.
	steady time.Duration
	// logs, when set, is a directory each manager's output is appended to
	// (<size>-<replica id>.log).
	logs string
	// manager is the manager binary, managerArgs further flags for it.
	manager     string
	managerArgs []string
	// out is the directory the JSON report is written to.
	out   string
	smoke bool

	// interval and timeout are every checker's spec.interval and
	// spec.timeout.
	interval, timeout time.Duration
	// leaseDuration and renewInterval are the managers' lease timings.
	leaseDuration, renewInterval time.Duration
	// replicas is the number of manager processes.
	replicas int
	// failingEvery and flipEvery pick the checkers whose target fails from
	// the start (every 20th: 5 %) and the healthy ones that are flipped.
	failingEvery, flipEvery int
	// createWorkers create the checkers at once, through a client paced at
	// createQPS.
	createWorkers int
	createQPS     float32
	// convergeWithin bounds every wait for Ready conditions.
	convergeWithin time.Duration
}

// defaultOptions are the full bench's parameters.
func defaultOptions() options {
	return options{
		sizes:          []int{1000, 3000, 10000},
		steady:         60 * time.Second,
		interval:       10 * time.Second,
		timeout:        2 * time.Second,
		leaseDuration:  10 * time.Second,
		renewInterval:  2 * time.Second,
		replicas:       3,
		failingEvery:   20,
		flipEvery:      20,
		createWorkers:  64,
		createQPS:      5000,
		convergeWithin: 5 * time.Minute,
	}
}

// applySmoke shrinks o to the smoke size: every phase, in well under a
// minute.
func (o *options) applySmoke(sizesSet, steadySet, convergeSet bool) {
	if !sizesSet {
		o.sizes = []int{30}
	}
	if !steadySet {
		o.steady = 3 * time.Second
	}
	o.interval, o.timeout = 2*time.Second, time.Second
	o.leaseDuration, o.renewInterval = 5*time.Second, time.Second
	if !convergeSet {
		o.convergeWithin = time.Minute
	}
}

// parseOptions parses the command line args.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	o := defaultOptions()
	fs := flag.NewFlagSet("controlplane", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", joinInts(o.sizes), "Comma-separated numbers of WebCheckers, one fresh control plane each; the largest also measures the hand-over.")
	fs.DurationVar(&o.steady, "steady", o.steady, "Length of the steady window (status writes, API requests, CPU and memory).")
	fs.StringVar(&o.manager, "manager", "", "Manager binary (default: bin/manager under the repository root).")
	managerArgs := fs.String("manager-args", "", "Further manager flags, separated by spaces.")
	fs.StringVar(&o.logs, "logs", "", "Directory the managers' logs are appended to, one file per size and replica (default: kept in memory only).")
	fs.StringVar(&o.out, "out", "", "Directory the JSON report (controlplane.json) is written to (default: bin/bench under the repository root).")
	fs.DurationVar(&o.convergeWithin, "converge-within", o.convergeWithin, "How long to wait, after the last create and after the flip, for the Ready conditions before giving up (a slow build may need more).")
	fs.BoolVar(&o.smoke, "smoke", false, "Tiny run: 30 checkers, 2 s interval, 5 s leases, 3 s steady window, every phase.")
	if err := fs.Parse(args); err != nil {
		return options{}, fmt.Errorf("parsing flags: %w", err)
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	if o.sizes, err = parseInts(*sizes); err != nil {
		return options{}, fmt.Errorf("--sizes: %w", err)
	}
	o.managerArgs = strings.Fields(*managerArgs)
	if o.smoke {
		o.applySmoke(set["sizes"], set["steady"], set["converge-within"])
	}
	if o.manager == "" || o.out == "" {
		root, err := framework.RepoRoot()
		if err != nil {
			return options{}, err
		}
		if o.manager == "" {
			o.manager = filepath.Join(root, "bin", "manager")
		}
		if o.out == "" {
			o.out = filepath.Join(root, "bin", "bench")
		}
	}
	return o, nil
}

// params are the options as the report records them.
func (o *options) params() map[string]any {
	return map[string]any{
		"sizes":              o.sizes,
		"steady":             o.steady.String(),
		"interval":           o.interval.String(),
		"timeout":            o.timeout.String(),
		"leaseDuration":      o.leaseDuration.String(),
		"leaseRenewInterval": o.renewInterval.String(),
		"replicas":           o.replicas,
		"failingShare":       1 / float64(o.failingEvery),
		"flipShare":          1 / float64(o.flipEvery),
		"createWorkers":      o.createWorkers,
		"createQPS":          o.createQPS,
		"manager":            o.manager,
		"managerArgs":        o.managerArgs,
		"smoke":              o.smoke,
		"convergeWithin":     o.convergeWithin.String(),
		"promiseSIGTERM":     o.promiseTerm().String(),
		"promiseSIGKILL":     o.promiseKill().String(),
	}
}

// promiseTerm is the README's promise for a replica stopped with SIGTERM:
// its checkers are probed again within interval + 2 s.
func (o *options) promiseTerm() time.Duration { return o.interval + 2*time.Second }

// promiseKill is the promise for a replica killed with SIGKILL: interval +
// lease duration + 2 s.
func (o *options) promiseKill() time.Duration {
	return o.interval + o.leaseDuration + 2*time.Second
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("size %q: %w", f, err)
		}
		if n < 20 {
			return nil, fmt.Errorf("size %d: at least 20 checkers, so that some fail and some flip", n)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no size")
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
