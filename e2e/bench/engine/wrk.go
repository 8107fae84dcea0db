package main

import (
	"fmt"
	"math"
	"regexp"
	"runtime"
	"strconv"
	"time"
)

// wrkResult is what a wrk run reported and used.
type wrkResult struct {
	// requests and rate are wrk's own figures ("N requests in ...",
	// "Requests/sec:"); errors its non-2xx/3xx responses and socket errors.
	requests int64
	rate     float64
	errors   int64
	// cpu is wrk's CPU time since it started, read from /proc when it
	// exited (startup included, a few milliseconds).
	cpu     time.Duration
	target  targetLoad
	threads int
	seconds int
}

// wrkThreads is the number of wrk threads for connections: one per CPU,
// but never more than connections (wrk needs one connection per thread).
func wrkThreads(connections int) int { return min(runtime.NumCPU(), connections) }

// runWrk runs wrk keep-alive against the target with concurrency
// connections for cfg.duration (rounded up to whole seconds, wrk's unit).
func runWrk(cfg config, tgt *target, binary string) (wrkResult, error) {
	r := wrkResult{threads: wrkThreads(cfg.concurrency), seconds: int(math.Ceil(cfg.duration.Seconds()))}
	m, err := startMeter(tgt)
	if err != nil {
		return wrkResult{}, err
	}
	c, err := startChild("wrk", binary, []string{
		"-t", strconv.Itoa(r.threads), "-c", strconv.Itoa(cfg.concurrency),
		"-d", strconv.Itoa(r.seconds) + "s", tgt.url(),
	})
	if err != nil {
		return wrkResult{}, err
	}
	defer c.stop()
	last, err := c.runToExit()
	if err != nil {
		return wrkResult{}, err
	}
	u, err := m.stop()
	if err != nil {
		return wrkResult{}, err
	}
	r.cpu, r.target = last.CPU, u.target
	if err := parseWrk(c.out.String(), &r); err != nil {
		return wrkResult{}, err
	}
	return r, nil
}

var (
	wrkRequests     = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	wrkRate         = regexp.MustCompile(`(?m)^Requests/sec:\s*([0-9.]+)`)
	wrkNon2xx       = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s*(\d+)`)
	wrkSocketErrors = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads the request count, the rate and the errors from wrk's
// report into r.
func parseWrk(out string, r *wrkResult) error {
	m := wrkRequests.FindStringSubmatch(out)
	rate := wrkRate.FindStringSubmatch(out)
	if m == nil || rate == nil {
		return fmt.Errorf("no request count or Requests/sec in wrk's output:\n%s", out)
	}
	var err error
	if r.requests, err = strconv.ParseInt(m[1], 10, 64); err != nil {
		return fmt.Errorf("wrk's request count %q: %w", m[1], err)
	}
	if r.rate, err = strconv.ParseFloat(rate[1], 64); err != nil {
		return fmt.Errorf("wrk's Requests/sec %q: %w", rate[1], err)
	}
	r.errors = 0
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64) // \d+ always parses
		r.errors += n
	}
	if m := wrkSocketErrors.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			r.errors += n
		}
	}
	return nil
}
