package membership

// Fencing: a replica that could not renew its Lease in time stops probing
// and writing status until it renews again. The Heartbeat's renewals move
// the deadline; these methods read it, fence the replica when it has
// passed and tell the Assigner of every change.

import "time"

// Fenced reports whether the replica must not probe or write status now:
// it has not joined the ring yet, it stopped, or lease duration − safety
// margin has passed since the start of its last successful renewal. That
// deadline is read here too, not only by the timer each renewal sets, whose
// callback runs only once the runtime gets to it: a process thawed after a
// freeze (SIGSTOP, a paused VM) or starved of CPU past its deadline is
// fenced from its first read, before it starts a probe or a write with the
// ring it knew before.
func (h *Heartbeat) Fenced() bool { return h.fenceIfDue() }

// FencedSince returns when the replica's current fencing began, on the
// Clock: for a fencing at the deadline, the deadline, however late it was
// noticed (see Fenced). It is zero when the replica is not fenced, and
// while it has not yet joined the ring (it starts fenced).
func (h *Heartbeat) FencedSince() time.Time {
	if !h.fenceIfDue() {
		return time.Time{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fencedSince
}

// Fencings counts the times the replica fenced itself after it had
// joined the ring: it starts fenced, and that does not count.
func (h *Heartbeat) Fencings() uint64 {
	h.fenceIfDue()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fencings
}

// FencingChanges returns a channel that receives a value after every change
// of Fenced: "fencing changed, read Fenced()". The Heartbeat never blocks on
// it; its capacity is 1, so changes the reader has not yet taken arrive as
// one. It is meant for a single reader (the Assigner).
func (h *Heartbeat) FencingChanges() <-chan struct{} { return h.fencingChanges }

// fenceAt is when the replica must be fenced; h.mu must be held.
func (h *Heartbeat) fenceAt() time.Time {
	return h.lastRenew.Add(h.opts.LeaseDuration - h.opts.SafetyMargin)
}

// fenceIfDue fences the replica if its deadline has passed, from the
// deadline (a timer that fires just as a renewal moves the deadline does
// nothing), and reports whether it is fenced.
func (h *Heartbeat) fenceIfDue() bool {
	h.mu.Lock()
	due := !h.fenced && !h.opts.Clock.Now().Before(h.fenceAt())
	if due {
		h.fenced, h.fencedSince = true, h.fenceAt()
		h.fencings++
	}
	fenced, last := h.fenced, h.lastRenew
	h.mu.Unlock()
	if due {
		h.log.Info("Lease not renewed in time, fencing: no probes and no status writes until it is", "lastRenew", last)
		h.fencingChanged(true)
	}
	return fenced
}

// setFenced fences the replica, or lifts its fencing, now.
func (h *Heartbeat) setFenced(fenced bool) {
	h.mu.Lock()
	changed := h.fenced != fenced
	h.fenced = fenced
	if changed && fenced {
		h.fencedSince = h.opts.Clock.Now()
		h.fencings++
	}
	h.mu.Unlock()
	if changed {
		h.fencingChanged(fenced)
	}
}

// fencingChanged logs a change of the fencing and signals it.
func (h *Heartbeat) fencingChanged(fenced bool) {
	h.log.Info("Fencing changed", "fenced", fenced)
	wake(h.fencingChanges)
}

// wake sends on a signal channel of capacity 1 without blocking: a signal
// already pending stands for this one too.
func wake(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
