package main

import (
	"fmt"
	"time"

	"github.com/networkio/webchecker/e2e/bench/report"
)

// The goals of the engine bench.
const (
	goalFreshVsBlackbox = 8.0  // engine fresh, probes per CPU-second
	goalReuseVsBlackbox = 15.0 // engine reuse, probes per CPU-second
	goalReuseVsWrk      = 0.5  // engine reuse probes/s over wrk's requests/s
	goalLagP99          = 50 * time.Millisecond
)

// results are the figures of every phase.
type results struct {
	fresh, reuse, blackbox loopResult
	// tlsProber and tlsBlackbox probe over https, a fresh TLS connection
	// per probe; spreadProber and spreadBlackbox over the spread
	// addresses.
	tlsProber, tlsBlackbox       loopResult
	spreadProber, spreadBlackbox loopResult
	blackboxDriverCPU            time.Duration
	wrk                          wrkResult
	schedule                     scheduleResult
	offered                      float64 // the scheduler phase's probes/s
}

// Section titles, also checked by the smoke test.
const (
	sectionProber   = "HTTP prober (closed loop)"
	sectionBlackbox = "prometheus-blackbox-exporter (closed loop over GET /probe)"
	sectionWrk      = "wrk (keep-alive)"
	sectionSchedule = "scheduler (real prober, fresh connections)"
)

// sectionTLS is the title of the https section of cfg.
func sectionTLS(cfg config) string {
	return fmt.Sprintf("https, a fresh TLS connection per probe: %d in flight, 1 address (closed loop)", cfg.concurrency)
}

// sectionSpread is the title of the spread section of cfg.
func sectionSpread(cfg config) string {
	return fmt.Sprintf("probing.NewProber, fresh connections: %d in flight over %d addresses, %s (closed loop)",
		cfg.spreadConcurrency, cfg.spreadAddresses, spreadRange(cfg.spreadAddresses))
}

// addRows adds the sections of r to rep.
func (r results) addRows(rep *report.Report, cfg config) {
	bbRate := r.blackbox.probesPerCPUSecond()
	rep.Add(sectionProber,
		report.Row{Name: "probes/s, fresh connection", Value: r.fresh.probesPerSecond(), Unit: "probes/s"},
		compared("probes per CPU-second, fresh connection", r.fresh.probesPerCPUSecond(), "probes/CPU-s", "blackbox exporter", bbRate, goalFreshVsBlackbox),
		report.Row{Name: "failed probes, fresh connection", Value: float64(r.fresh.failed), Unit: "probes"},
		report.Row{Name: "connections per probe, fresh", Value: r.fresh.connsPerCall(), Unit: "conns"},
		report.Row{Name: "target server CPU, fresh", Value: cores(r.fresh.target.cpu, r.fresh.wall), Unit: "cores"},
		compared("probes/s, reused connections", r.reuse.probesPerSecond(), "probes/s", "wrk requests/s", r.wrk.rate, goalReuseVsWrk),
		compared("probes per CPU-second, reused connections", r.reuse.probesPerCPUSecond(), "probes/CPU-s", "blackbox exporter", bbRate, goalReuseVsBlackbox),
		report.Row{Name: "failed probes, reused connections", Value: float64(r.reuse.failed), Unit: "probes"},
		report.Row{Name: "connections per probe, reused", Value: r.reuse.connsPerCall(), Unit: "conns"},
		report.Row{Name: "target server CPU, reused", Value: cores(r.reuse.target.cpu, r.reuse.wall), Unit: "cores"},
	)
	rep.Add(sectionBlackbox,
		report.Row{Name: "probes/s with probe_success 1", Value: r.blackbox.probesPerSecond(), Unit: "probes/s"},
		report.Row{Name: "probes per CPU-second (exporter process only)", Value: bbRate, Unit: "probes/CPU-s"},
		report.Row{Name: "failed probes", Value: float64(r.blackbox.failed), Unit: "probes"},
		report.Row{Name: "connections per probe", Value: r.blackbox.connsPerCall(), Unit: "conns"},
		report.Row{Name: "driver CPU (the bench's clients, not counted)", Value: cores(r.blackboxDriverCPU, r.blackbox.wall), Unit: "cores"},
		report.Row{Name: "target server CPU", Value: cores(r.blackbox.target.cpu, r.blackbox.wall), Unit: "cores"},
	)
	// The handshake's cryptography is most of an https probe, for both:
	// no goal on the ratio.
	addVersusRows(rep, sectionTLS(cfg), r.tlsProber, r.tlsBlackbox, 0)
	addVersusRows(rep, sectionSpread(cfg), r.spreadProber, r.spreadBlackbox, goalFreshVsBlackbox)
	r.addWrkRows(rep)
	r.addScheduleRows(rep)
}

// addVersusRows adds a section of the prober beside the exporter in the
// same configuration; goal, when not 0, is the least ratio of probes per
// CPU-second.
func addVersusRows(rep *report.Report, title string, prober, blackbox loopResult, goal float64) {
	bbRate := blackbox.probesPerCPUSecond()
	perCPU := compared("webchecker probes per CPU-second", prober.probesPerCPUSecond(), "probes/CPU-s", "blackbox exporter", bbRate, goal)
	if goal == 0 {
		perCPU.Goal, perCPU.Met = "", nil
	}
	rep.Add(title,
		report.Row{Name: "webchecker probes/s", Value: prober.probesPerSecond(), Unit: "probes/s", Reference: "blackbox exporter probes/s", Ratio: ratio(prober.probesPerSecond(), blackbox.probesPerSecond())},
		perCPU,
		report.Row{Name: "webchecker failed probes", Value: float64(prober.failed), Unit: "probes"},
		report.Row{Name: "webchecker connections per probe", Value: prober.connsPerCall(), Unit: "conns"},
		report.Row{Name: "blackbox exporter probes/s with probe_success 1", Value: blackbox.probesPerSecond(), Unit: "probes/s"},
		report.Row{Name: "blackbox exporter probes per CPU-second (exporter process only)", Value: bbRate, Unit: "probes/CPU-s"},
		report.Row{Name: "blackbox exporter failed probes", Value: float64(blackbox.failed), Unit: "probes"},
		report.Row{Name: "blackbox exporter connections per probe", Value: blackbox.connsPerCall(), Unit: "conns"},
		report.Row{Name: "target server CPU, webchecker phase", Value: cores(prober.target.cpu, prober.wall), Unit: "cores"},
		report.Row{Name: "target server CPU, exporter phase", Value: cores(blackbox.target.cpu, blackbox.wall), Unit: "cores"},
	)
}

func (r results) addWrkRows(rep *report.Report) {
	w := r.wrk
	wall := time.Duration(w.seconds) * time.Second
	rep.Add(sectionWrk,
		report.Row{Name: "requests/s", Value: w.rate, Unit: "requests/s"},
		report.Row{Name: "requests per CPU-second", Value: perSecond(float64(w.requests), w.cpu), Unit: "requests/CPU-s"},
		report.Row{Name: "wrk CPU", Value: cores(w.cpu, wall), Unit: "cores"},
		report.Row{Name: "errors (non-2xx/3xx, socket)", Value: float64(w.errors), Unit: "requests"},
		report.Row{Name: "target server CPU", Value: cores(w.target.cpu, wall), Unit: "cores"},
	)
}

func (r results) addScheduleRows(rep *report.Report) {
	s := r.schedule
	p99 := percentile(s.lags, 0.99)
	rep.Add(sectionSchedule,
		report.Row{Name: "offered load (checks / interval)", Value: r.offered, Unit: "probes/s", Reference: "prober fresh probes/s", Ratio: ratio(r.offered, r.fresh.probesPerSecond())},
		report.Row{Name: "probes/s achieved", Value: perSecond(float64(s.probes), s.wall), Unit: "probes/s"},
		report.Row{Name: "engine CPU per probe", Value: perProbe(s.cpu, s.probes), Unit: "µs"},
		report.Row{Name: "failed probes", Value: float64(s.failed), Unit: "probes"},
		report.Row{Name: "start lag p50", Value: millis(percentile(s.lags, 0.5)), Unit: "ms"},
		report.Row{Name: "start lag p99", Value: millis(p99), Unit: "ms", Goal: fmt.Sprintf("<= %d ms", goalLagP99.Milliseconds()), Met: report.Met(p99 <= goalLagP99)},
		report.Row{Name: "start lag max", Value: millis(percentile(s.lags, 1)), Unit: "ms"},
		report.Row{Name: "lag samples (second and later probes)", Value: float64(len(s.lags)), Unit: "probes"},
		report.Row{Name: "target server CPU", Value: cores(s.target.cpu, s.wall), Unit: "cores"},
	)
}

// compared is a row compared with a reference figure, with a goal of at
// least goal times it.
func compared(name string, value float64, unit, reference string, refValue, goal float64) report.Row {
	return report.Row{
		Name: name, Value: value, Unit: unit, Reference: reference, Ratio: ratio(value, refValue),
		Goal: fmt.Sprintf(">= %gx", goal), Met: report.Met(refValue > 0 && value/refValue >= goal),
	}
}

// ratio is a/b, 0 when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// cores is cpu over wall: how many CPUs were busy on average.
func cores(cpu, wall time.Duration) float64 { return perSecond(cpu.Seconds(), wall) }

// perProbe is cpu per probe in microseconds.
func perProbe(cpu time.Duration, probes int64) float64 {
	return ratio(float64(cpu.Microseconds()), float64(probes))
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
