package main

import (
	"math"
	"math/rand/v2"
	"time"
)

// The profiles of the targets (--profile).
const (
	// profileInstant: every target answers at once over http, 5 % of
	// them 500.
	profileInstant = "instant"
	// profileRealistic: the targets answer after a lognormal delay, 20 %
	// of the checkers probe over https, 1 % a path that never answers, 5 %
	// get 500; the largest size then runs the failure sequence (see
	// failures.go).
	profileRealistic = "realistic"
)

// The realistic profile's parameters.
const (
	// realisticTimeout is the spec.timeout of the checkers that get an
	// answer.
	realisticTimeout = 4 * time.Second
	// hangTimeoutMax is the spec.timeout of the checkers whose target
	// never answers, when the interval allows it (the API wants a timeout
	// below the interval: 90 % of it at most).
	hangTimeoutMax = 10 * time.Second
	// delayMedian and delayP99 shape the lognormal delay of an answer;
	// delayCap caps it (or half the timeout, when that is shorter).
	delayMedian = 80 * time.Millisecond
	delayP99    = time.Second
	delayCap    = 2 * time.Second
	// delaySeed seeds the delays: a run gives every probe of every
	// checker the same delay as the last run did.
	delaySeed = 24
	// httpsEvery and hangEvery pick the checkers over https (every 5th,
	// from index 1: 20 %) and those whose target never answers (every
	// 100th, from index hangOffset: 1 %). failingEvery (options) picks the
	// failing ones from index 0, so the three sets are apart.
	httpsEvery = 5
	hangEvery  = 100
	hangOffset = 7
	// smokeRealisticSize is the realistic smoke's size: enough for a
	// checker of every kind (index 7 never answers).
	smokeRealisticSize = 60
)

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// targetKind is what a checker's target does.
type targetKind uint8

const (
	// kindHTTP answers over http.
	kindHTTP targetKind = iota
	// kindHTTPS answers over https, with the bench's CA.
	kindHTTPS
	// kindHang accepts the request over http and never answers: it
	// holds it until the client goes away (bounded by holdBound).
	kindHang
)

// kindOf is the kind of checker i's target.
func (o *options) kindOf(i int) targetKind {
	if o.profile != profileRealistic {
		return kindHTTP
	}
	switch {
	case i%hangEvery == hangOffset:
		return kindHang
	case i%httpsEvery == 1:
		return kindHTTPS
	default:
		return kindHTTP
	}
}

// failsFromStart tells whether checker i's target answers 500 from the
// start.
func (o *options) failsFromStart(i int) bool { return i%o.failingEvery == 0 }

// timeoutOf is the spec.timeout of checker i.
func (o *options) timeoutOf(i int) time.Duration {
	if o.kindOf(i) == kindHang {
		return o.hangTimeout
	}
	return o.timeout
}

// latency draws the delay of an answer: lognormal with the median and the
// 99th percentile given, capped, the same for the same checker, probe
// number and seed.
type latency struct {
	seed      uint64
	mu, sigma float64
	cap       time.Duration
}

// newLatency returns the latency of median, p99 and cap.
func newLatency(seed uint64, median, p99, cap time.Duration) *latency {
	mu := math.Log(median.Seconds())
	return &latency{seed: seed, mu: mu, sigma: (math.Log(p99.Seconds()) - mu) / z99, cap: cap}
}

// of returns the delay of the n-th probe (from 0) of checker i.
func (l *latency) of(i, n int) time.Duration {
	r := rand.New(rand.NewPCG(l.seed^uint64(i)<<20, uint64(n)))
	d := time.Duration(math.Exp(l.mu+l.sigma*r.NormFloat64()) * float64(time.Second))
	return min(d, l.cap)
}

// latencyOf is the realistic profile's latency, nil for the instant one.
func (o *options) latencyOf() *latency {
	if o.profile != profileRealistic {
		return nil
	}
	return newLatency(delaySeed, delayMedian, delayP99, min(delayCap, o.timeout/2))
}
