package scheduler

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// How the dispatcher sleeps between due turns.

// sleep blocks until ctx is done, the dispatcher is woken, or, if timer
// is not nil, wait has passed on the scheduler clock (timed with timer).
func (s *Scheduler) sleep(ctx context.Context, timer *sleepTimer, wait time.Duration) {
	var fired <-chan time.Time
	if timer != nil {
		fired = timer.start(s.clock, wait)
		defer timer.stop()
	}
	select {
	case <-ctx.Done():
	case <-s.wake:
	case <-fired:
	}
}

// sleepTimer is the dispatcher's one timer, reused from one wait to the
// next: with checks spread over their interval the dispatcher waits before
// nearly every probe, and a new timer for each wait costs allocations. The
// zero value is ready to use; it is not safe for concurrent use.
type sleepTimer struct {
	t clock.Timer
}

// start arms the timer to fire once wait has passed on clk and returns its
// channel. The timer must be stopped (stop) since it was last started.
func (st *sleepTimer) start(clk clock.WithTicker, wait time.Duration) <-chan time.Time {
	if st.t == nil {
		st.t = clk.NewTimer(wait)
	} else {
		st.t.Reset(wait)
	}
	return st.t.C()
}

// stop disarms the timer and drops a firing that nobody received, so that
// the next wait never sees a stale one.
func (st *sleepTimer) stop() {
	if st.t != nil && !st.t.Stop() {
		select {
		case <-st.t.C():
		default:
		}
	}
}
