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
	// pprofPort, when positive, has replica i serve its runtime profiles
	// on 127.0.0.1:pprofPort+i (replica-a on pprofPort).
	pprofPort int
	// out is the directory the JSON report is written to.
	out   string
	smoke bool
	// profile is what the targets do: profileInstant answers at once,
	// profileRealistic as servers on a network do (see profile.go).
	profile string
	// name is the report's name, the JSON file's base name.
	name string

	// interval is every checker's spec.interval; timeout the spec.timeout
	// of every checker but the realistic profile's hanging ones, which
	// have hangTimeout.
	interval, timeout, hangTimeout time.Duration
	// leaseDuration and renewInterval are the managers' lease timings.
	leaseDuration, renewInterval time.Duration
	// replicas is the number of manager processes.
	replicas int
	// failingEvery and flipEvery pick the checkers whose target fails from
	// the start (every 20th: 5 %) and the healthy ones that are flipped.
	failingEvery, flipEvery int
	// createWorkers create the checkers at once, spread over createClients
	// clients (each its own connection), each paced at createQPS.
	createWorkers, createClients int
	createQPS                    float32
	// convergeWithin bounds every wait for Ready conditions.
	convergeWithin time.Duration
	// admin runs the replicas and the creates as the control plane's
	// admin (system:masters, exempt from API Priority and Fairness)
	// instead of identities of their own (see identities).
	admin bool
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
		createClients:  4,
		createQPS:      5000,
		profile:        profileInstant,
		convergeWithin: 5 * time.Minute,
	}
}

// applySmoke shrinks o to the smoke size: every phase, in well under a
// minute.
func (o *options) applySmoke(sizesSet, steadySet, convergeSet bool) {
	if !sizesSet {
		o.sizes = []int{30}
		if o.profile == profileRealistic {
			o.sizes = []int{smokeRealisticSize}
		}
	}
	if !steadySet {
		o.steady = 3 * time.Second
	}
	o.interval, o.timeout = 2*time.Second, time.Second
	if o.profile == profileRealistic {
		// Probes take up to a second here: a 2 s interval leaves no
		// room for a timeout above the slowest answer.
		o.interval, o.timeout = 3*time.Second, 2*time.Second
	}
	o.leaseDuration, o.renewInterval = 5*time.Second, time.Second
	if !convergeSet {
		o.convergeWithin = time.Minute
	}
}

// finish checks the profile and the sizes and derives what follows from
// them: the timeouts, the report's name.
func (o *options) finish(set map[string]bool) error {
	switch o.profile {
	case profileInstant:
		o.hangTimeout = o.timeout
	case profileRealistic:
		if !o.smoke {
			o.timeout = realisticTimeout
		}
		// The API wants a timeout below the interval.
		o.hangTimeout = min(hangTimeoutMax, o.interval*9/10)
	default:
		return fmt.Errorf("--profile %q: instant or realistic", o.profile)
	}
	minReplicas := 2
	if o.profile == profileRealistic {
		minReplicas = 3 // one killed, one stopped, one left
	}
	var errs []error
	if o.replicas < minReplicas || o.replicas > 26 {
		errs = append(errs, fmt.Errorf("--replicas %d: from %d to 26 with --profile %s", o.replicas, minReplicas, o.profile))
	}
	if o.timeout >= o.interval || (!o.smoke && o.interval < 5*time.Second) {
		errs = append(errs, fmt.Errorf("--interval %s: at least 5s and above the timeout %s", o.interval, o.timeout))
	}
	if o.createWorkers < 1 || o.createClients < 1 || o.createQPS <= 0 {
		errs = append(errs, errors.New("--create-workers, --create-clients and --create-qps must be positive"))
	}
	if o.name == "" {
		o.name = "controlplane"
		if o.profile == profileRealistic {
			o.name += "-realistic"
		}
		if o.replicas != 3 || o.interval != 10*time.Second {
			o.name += fmt.Sprintf("-%dx%s", o.replicas, o.interval)
		}
	}
	return errors.Join(errs...)
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
	fs.IntVar(&o.pprofPort, "pprof-port", 0, "When positive, replica i serves /debug/pprof on 127.0.0.1:<pprof-port + i> (replica-a on the port itself), to profile a run.")
	fs.StringVar(&o.logs, "logs", "", "Directory the managers' logs are appended to, one file per size and replica (default: kept in memory only).")
	fs.StringVar(&o.out, "out", "", "Directory the JSON report (controlplane.json) is written to (default: bin/bench under the repository root).")
	fs.DurationVar(&o.convergeWithin, "converge-within", o.convergeWithin, "How long to wait, after the last create and after the flip, for the Ready conditions before giving up (a slow build may need more).")
	fs.BoolVar(&o.smoke, "smoke", false, "Tiny run: 30 checkers (60 realistic), 2 s interval (3 s realistic), 5 s leases, 3 s steady window, every phase.")
	fs.StringVar(&o.profile, "profile", o.profile, "What the targets do: instant (answer at once, 5 % fail) or realistic (lognormal delays, 20 % https, 1 % never answer, 5 % fail; then the failure sequence).")
	fs.IntVar(&o.replicas, "replicas", o.replicas, "Manager processes sharing the ring (2 to 26; the hand-over stops one or two of them).")
	fs.DurationVar(&o.interval, "interval", o.interval, "Every checker's spec.interval (at least 5s outside --smoke).")
	fs.DurationVar(&o.leaseDuration, "lease-duration", o.leaseDuration, "The managers' --lease-duration.")
	fs.IntVar(&o.createWorkers, "create-workers", o.createWorkers, "Concurrent creates of the checkers.")
	fs.IntVar(&o.createClients, "create-clients", o.createClients, "Clients (connections to the API server) the creates are spread over.")
	createQPS := fs.Float64("create-qps", float64(o.createQPS), "Client-side rate limit of each creating client, in requests/s.")
	fs.BoolVar(&o.admin, "admin", false, "Run the replicas and the creates as the control plane's admin (system:masters, which API Priority and Fairness exempts), as every run before 2026-12-06 did, instead of a ServiceAccount with the generated RBAC rules and the chart's Lease FlowSchema, and a user who may only create WebCheckers.")
	fs.StringVar(&o.name, "name", "", "Name of the report and of its JSON file (default: controlplane, controlplane-realistic, with -<replicas>x<interval> when not 3 replicas every 10s).")
	if err := fs.Parse(args); err != nil {
		return options{}, fmt.Errorf("parsing flags: %w", err)
	}
	o.createQPS = float32(*createQPS)
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
	if !set["sizes"] && o.profile == profileRealistic {
		o.sizes = []int{10000}
	}
	if o.smoke {
		o.applySmoke(set["sizes"], set["steady"], set["converge-within"])
	}
	if err := o.finish(set); err != nil {
		return options{}, err
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
		"hangTimeout":        o.hangTimeout.String(),
		"leaseDuration":      o.leaseDuration.String(),
		"leaseRenewInterval": o.renewInterval.String(),
		"replicas":           o.replicas,
		"failingShare":       1 / float64(o.failingEvery),
		"flipShare":          1 / float64(o.flipEvery),
		"createWorkers":      o.createWorkers,
		"createClients":      o.createClients,
		"profile":            o.profile,
		"createQPS":          o.createQPS,
		"manager":            o.manager,
		"managerArgs":        o.managerArgs,
		"smoke":              o.smoke,
		"convergeWithin":     o.convergeWithin.String(),
		"admin":              o.admin,
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
