package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/e2e/bench/procstat"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/scheduler"
)

// newManagerProber builds the HTTP prober as cmd/manager builds it with its
// default flags (options.go, replicaOptions and egressPolicy) and the
// loopback allowance the benchmark's targets need
// (--allow-cidrs=127.0.0.0/8,::1/128, as framework.LoopbackAllowance): no
// --dns-server (the targets are IP literals, nothing is resolved), the
// default deny list, and the manager's User-Agent. The cluster's networks
// are not watched here (none are denied).
func newManagerProber() (*probing.HTTPProber, error) {
	opts, err := managerProberOptions()
	if err != nil {
		return nil, err
	}
	return probing.NewHTTPProber(opts), nil
}

// newKindProber is probing.NewProber, the prober of every kind that
// cmd/manager builds, with newManagerProber's options.
func newKindProber() (*probing.KindProber, error) {
	opts, err := managerProberOptions()
	if err != nil {
		return nil, err
	}
	return probing.NewProber(opts), nil
}

// managerProberOptions are newManagerProber's options.
func managerProberOptions() (probing.ProberOptions, error) {
	allow, err := egress.ParseCIDRs([]string{"127.0.0.0/8", "::1/128"})
	if err != nil {
		return probing.ProberOptions{}, fmt.Errorf("parsing the loopback allowance: %w", err)
	}
	return probing.ProberOptions{
		UserAgent: "webchecker (shard bench)",
		Egress:    egress.NewPolicy(egress.Options{Allow: allow}),
	}, nil
}

// expectedStatus is the status code the target answers and every tool is
// told to expect.
const expectedStatus = 200

// The Secret the https check's CA comes from (handed over by
// caSecrets, not read from an API server).
const (
	caSecretName = "bench-ca"
	caSecretKey  = "ca.crt"
)

// checkFor builds the Check of a WebChecker namespace/name probing url
// every interval, as the reconciler does (checkspec.CheckFor), with the
// API's defaults but for two fields: the timeout, which must stay below
// the interval (the default 1s, or half an interval below 2s), and
// ReuseConnections. An https url trusts ca, through spec.tls.caSecretRef.
func checkFor(namespace, name, url string, interval time.Duration, reuse bool, ca []byte) (scheduler.Check, error) {
	wc := &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host:                strings.TrimSuffix(url, "/"),
			Interval:            &metav1.Duration{Duration: interval},
			Timeout:             &metav1.Duration{Duration: probeTimeout(interval)},
			ExpectedStatusCodes: []int32{expectedStatus},
			ReuseConnections:    reuse,
		},
	}
	if strings.HasPrefix(url, "https://") {
		wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{
			CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: caSecretName, Key: caSecretKey},
		}
	}
	c, err := checkspec.CheckFor(wc, caSecrets(ca))
	if err != nil {
		return scheduler.Check{}, fmt.Errorf("building the check of %s/%s: %w", namespace, name, err)
	}
	return c, nil
}

// caSecrets hands over ca as the only Secret key there is.
func caSecrets(ca []byte) checkspec.SecretValues {
	return func(name, key string) ([]byte, error) {
		if name == caSecretName && key == caSecretKey && ca != nil {
			return ca, nil
		}
		return nil, fmt.Errorf("secret %s key %s: %w", name, key, checkspec.ErrMissingKey)
	}
}

// probeTimeout is the timeout of checks probed every interval: the API's
// default, or half the interval when that is shorter.
func probeTimeout(interval time.Duration) time.Duration {
	return min(webcheckerv1alpha1.DefaultTimeout, interval/2)
}

// loopResult is what a closed loop of one client measured.
type loopResult struct {
	counts
	// wall is the phase's duration, cpu the CPU time of the measured
	// process over it.
	wall, cpu time.Duration
	target    targetLoad
}

// connsPerCall is the connections the target accepted per call.
func (r loopResult) connsPerCall() float64 {
	return ratio(float64(r.target.conns), float64(r.ok+r.failed))
}

// probesPerSecond counts only successful probes (or requests).
func (r loopResult) probesPerSecond() float64 { return perSecond(float64(r.ok), r.wall) }

// probesPerCPUSecond is successful probes per second of the measured
// process's CPU.
func (r loopResult) probesPerCPUSecond() float64 { return perSecond(float64(r.ok), r.cpu) }

// runProber drives the HTTP prober with cfg.concurrency goroutines
// calling Probe back to back for cfg.duration, against the target, over
// fresh connections or kept-alive ones (reuse). The CPU measured is this
// process's own.
func runProber(cfg config, tgt *target, reuse bool) (loopResult, error) {
	p, err := newManagerProber()
	if err != nil {
		return loopResult{}, err
	}
	defer p.CloseIdleConnections()
	check, err := checkFor("bench", "prober", tgt.url(), cfg.interval, reuse, nil)
	if err != nil {
		return loopResult{}, err
	}
	return proberLoop(p, []scheduler.Check{check}, cfg.concurrency, cfg.duration, tgt)
}

// runProberTLS drives the HTTP prober as runProber does, over https with
// a fresh TLS connection per probe.
func runProberTLS(cfg config, tgt *target) (loopResult, error) {
	p, err := newManagerProber()
	if err != nil {
		return loopResult{}, err
	}
	defer p.CloseIdleConnections()
	check, err := checkFor("bench", "prober-tls", tgt.tlsURL(), cfg.interval, false, tgt.ca)
	if err != nil {
		return loopResult{}, err
	}
	return proberLoop(p, []scheduler.Check{check}, cfg.concurrency, cfg.duration, tgt)
}

// runSpread drives the prober as cmd/manager uses it, probing.NewProber
// (the prober of every kind) with newManagerProber's options, with
// cfg.spreadConcurrency goroutines over the target's spread addresses in
// turn, fresh connections.
func runSpread(cfg config, tgt *target) (loopResult, error) {
	p, err := newKindProber()
	if err != nil {
		return loopResult{}, err
	}
	defer p.CloseIdleConnections()
	var checks []scheduler.Check
	for i, u := range tgt.spreadURLs() {
		c, err := checkFor("bench", fmt.Sprintf("spread-%d", i), u, cfg.interval, false, nil)
		if err != nil {
			return loopResult{}, err
		}
		checks = append(checks, c)
	}
	return proberLoop(p, checks, cfg.spreadConcurrency, cfg.duration, tgt)
}

// proberLoop drives p with concurrency goroutines probing checks in turn,
// back to back for d, and measures this process's CPU meanwhile.
func proberLoop(p probing.Prober, checks []scheduler.Check, concurrency int, d time.Duration, tgt *target) (loopResult, error) {
	ctx := context.Background()
	m, err := startMeter(tgt, procstat.Self)
	if err != nil {
		return loopResult{}, err
	}
	var next atomic.Uint64
	c := closedLoop(concurrency, d, func() bool {
		return p.Probe(ctx, checks[next.Add(1)%uint64(len(checks))].Target).Success
	})
	u, err := m.stop()
	if err != nil {
		return loopResult{}, err
	}
	return loopResult{counts: c, wall: u.wall, cpu: u.cpu[0], target: u.target}, nil
}
