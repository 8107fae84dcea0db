package scheduler

import "sync/atomic"

// What a Scheduler tells of how it keeps up with its checks: the bound on
// probes in flight, what they hold of it, and the turns it could not keep
// (skipped, or started late), for metrics read at scrape time.

// Load is how a Scheduler keeps up with its checks at one moment; the
// counts are since it was made.
type Load struct {
	// InFlight is the number of probes running, and InFlightBytes the
	// bytes of the memory budget they hold (see InFlightBytes).
	InFlight      int
	InFlightBytes int64
	// MemoryBudget is the bytes the probes in flight may hold at once
	// (see MemoryBudget), and Workers the bound on their number (0: none
	// but the budget).
	MemoryBudget int64
	Workers      int
	// Saturated is set while the dispatcher waits for the bound: a turn
	// is due and the probes in flight hold all the bound allows.
	Saturated bool
	// SkippedTurns counts the turns not probed because the check's
	// previous probe still ran: checks whose probes take longer than
	// their turns allow (Outcome.Overran).
	SkippedTurns uint64
	// WaitedTurns counts the turns that waited for the bound (the memory
	// budget, or Workers): the replica has more due than it may run at
	// once and cannot keep up.
	WaitedTurns uint64
	// SetAsideTurns counts the turns that waited because their
	// namespace held its share of the bound.
	SetAsideTurns uint64
	// LateTurns counts the turns that started more than LateThreshold
	// after they were due without waiting for the bound or a share (a
	// busy CPU, a slow Options.Owns).
	LateTurns uint64
}

// loadCounts are the counters of Load, updated without the lock.
type loadCounts struct {
	skipped, waited, setAside, late atomic.Uint64
	inFlightBytes                   atomic.Int64
	saturated                       atomic.Bool
}

// Load returns how the scheduler keeps up now.
func (s *Scheduler) Load() Load {
	return Load{
		InFlight:      s.InFlight(),
		InFlightBytes: s.load.inFlightBytes.Load(),
		MemoryBudget:  s.budget,
		Workers:       s.workers,
		Saturated:     s.load.saturated.Load(),
		SkippedTurns:  s.load.skipped.Load(),
		WaitedTurns:   s.load.waited.Load(),
		SetAsideTurns: s.load.setAside.Load(),
		LateTurns:     s.load.late.Load(),
	}
}
