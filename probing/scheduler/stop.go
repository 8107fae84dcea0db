package scheduler

// How the scheduler stops: the probes in flight when Start's context ends
// are given StopGrace to reach their targets.

import (
	"context"
	"sync"
	"time"
)

// StopGrace is how long Start, once it stopped starting probes, lets the
// probes in flight finish before it cancels them: long enough for one
// started right before the stop to reach its target, so that the turn it
// was counted as is probed, short enough not to hold a shutdown up.
const StopGrace = time.Second

// finishProbes waits up to StopGrace for the probes in flight (counted by
// wg), then cancels the rest with cancelProbes and waits for them.
func (s *Scheduler) finishProbes(wg *sync.WaitGroup, cancelProbes context.CancelFunc) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	grace := time.NewTimer(StopGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
	}
	cancelProbes()
	<-done
}

// stoppedProbing reports whether the dispatcher has stopped starting
// probes (Start's context ended).
func (s *Scheduler) stoppedProbing() bool {
	select {
	case <-s.probingStopped:
		return true
	default:
		return false
	}
}
