package main

import (
	"fmt"
	"time"

	"github.com/networkio/webchecker/e2e/bench/procstat"
)

// meter measures the wall time of a phase and the CPU time that the
// processes it watches used meanwhile, each read from /proc.
type meter struct {
	pids  []int
	start []procstat.Sample
}

// startMeter takes the first sample of every pid (procstat.Self for the
// bench itself).
func startMeter(pids ...int) (*meter, error) {
	m := &meter{pids: pids}
	for _, pid := range pids {
		s, err := procstat.Read(pid)
		if err != nil {
			return nil, fmt.Errorf("sampling pid %d: %w", pid, err)
		}
		m.start = append(m.start, s)
	}
	return m, nil
}

// usage is what a meter measured: the wall time, and the CPU time of each
// watched pid, in the order given to startMeter.
type usage struct {
	wall time.Duration
	cpu  []time.Duration
}

// stop takes the last sample of every pid.
func (m *meter) stop() (usage, error) {
	u := usage{cpu: make([]time.Duration, len(m.pids))}
	for i, pid := range m.pids {
		s, err := procstat.Read(pid)
		if err != nil {
			return usage{}, fmt.Errorf("sampling pid %d: %w", pid, err)
		}
		u.cpu[i] = s.CPUSince(m.start[i])
		if i == 0 {
			u.wall = s.At.Sub(m.start[i].At)
		}
	}
	return u, nil
}

// perSecond is n per second of d (0 when d is not positive).
func perSecond(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}
