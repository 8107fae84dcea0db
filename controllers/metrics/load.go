package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Label values of the reason label of
// webchecker_scheduler_delayed_turns_total: why a turn started late.
const (
	// DelayBound: the turn waited for the replica's bound on probes in
	// flight (or was due while another turn waited for it).
	DelayBound = "bound"
	// DelayNamespace: the turn waited for its namespace's share of the
	// bound.
	DelayNamespace = "namespace"
	// DelayLate: the turn started more than scheduler.LateThreshold after
	// it was due without waiting for either.
	DelayLate = "late"
)

// loadCollector exports how the probe scheduler keeps up with its checks
// (scheduler.Load), read once per scrape: the bound on probes in flight
// and what they hold of it, and the turns it could not keep.
type loadCollector struct {
	checks                                           CheckSource
	budget, held, workers, saturated, skipped, delay *prometheus.Desc
}

func newLoadCollector(checks CheckSource) *loadCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(Namespace+"_scheduler_"+name, help, labels, nil)
	}
	return &loadCollector{
		checks:    checks,
		budget:    desc("memory_budget_bytes", "Bytes the probes in flight of this replica may hold at once: a quarter of GOMEMLIMIT, 64 MiB when it is unset; each probe holds what its kind costs (24 KiB for http, 76 KiB for https, up to 152 KiB for grpcs)."),
		held:      desc("inflight_bytes", "Bytes of webchecker_scheduler_memory_budget_bytes the probes running now hold."),
		workers:   desc("workers", "The bound on the number of probes in flight (--probe-workers); 0 when only the memory budget bounds them."),
		saturated: desc("saturated", "1 while a due probe waits because the probes in flight hold all the bound allows (the memory budget, or --probe-workers): the replica cannot keep up; 0 otherwise."),
		skipped:   desc("skipped_turns_total", "Turns of checkers not probed because their previous probe still ran: probes that take longer than their interval allows."),
		delay:     desc("delayed_turns_total", "Turns of checkers started late, by reason: bound (waited for the bound on probes in flight), namespace (waited for the namespace's share of it), late (started more than 1s after due otherwise).", "reason"),
	}
}

// Describe implements prometheus.Collector.
func (c *loadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.budget, c.held, c.workers, c.saturated, c.skipped, c.delay} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *loadCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.checks.Load()
	ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(l.MemoryBudget))
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(l.InFlightBytes))
	ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, float64(l.Workers))
	ch <- prometheus.MustNewConstMetric(c.saturated, prometheus.GaugeValue, boolValue(l.Saturated))
	ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(l.SkippedTurns))
	ch <- prometheus.MustNewConstMetric(c.delay, prometheus.CounterValue, float64(l.WaitedTurns), DelayBound)
	ch <- prometheus.MustNewConstMetric(c.delay, prometheus.CounterValue, float64(l.SetAsideTurns), DelayNamespace)
	ch <- prometheus.MustNewConstMetric(c.delay, prometheus.CounterValue, float64(l.LateTurns), DelayLate)
}
