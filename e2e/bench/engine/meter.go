package main

import (
	"fmt"
	"time"

	"github.com/networkio/webchecker/e2e/bench/procstat"
)

// meter measures a phase: its wall time, the CPU time that the processes it
// watches used meanwhile (read from /proc), and what the target server
// did.
type meter struct {
	tgt   *target
	pids  []int
	start []procstat.Sample
	conns int64
}

// startMeter takes the first sample of the target server and of every pid
// (procstat.Self for the bench itself).
func startMeter(tgt *target, pids ...int) (*meter, error) {
	m := &meter{tgt: tgt, pids: append(pids, tgt.pid())}
	var err error
	if m.conns, err = tgt.connections(); err != nil {
		return nil, err
	}
	for _, pid := range m.pids {
		s, err := procstat.Read(pid)
		if err != nil {
			return nil, fmt.Errorf("sampling pid %d: %w", pid, err)
		}
		m.start = append(m.start, s)
	}
	return m, nil
}

// usage is what a meter measured.
type usage struct {
	wall time.Duration
	// cpu is the CPU time of each watched pid, in the order given to
	// startMeter.
	cpu    []time.Duration
	target targetLoad
}

// targetLoad is what the target server did in a phase.
type targetLoad struct {
	// cpu is its CPU time, conns the connections it accepted.
	cpu   time.Duration
	conns int64
}

// stop takes the last sample of every pid and of the target.
func (m *meter) stop() (usage, error) {
	var u usage
	for i, pid := range m.pids {
		s, err := procstat.Read(pid)
		if err != nil {
			return usage{}, fmt.Errorf("sampling pid %d: %w", pid, err)
		}
		u.cpu = append(u.cpu, s.CPUSince(m.start[i]))
		if i == 0 {
			u.wall = s.At.Sub(m.start[i].At)
		}
	}
	u.target.cpu, u.cpu = u.cpu[len(u.cpu)-1], u.cpu[:len(u.cpu)-1]
	conns, err := m.tgt.connections()
	if err != nil {
		return usage{}, err
	}
	u.target.conns = conns - m.conns
	return u, nil
}

// perSecond is n per second of d (0 when d is not positive).
func perSecond(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}
