package scheduler

import (
	"math/bits"

	"github.com/networkio/webchecker/probing"
)

// Failure windows: a check judged by how many of its latest probes failed
// rather than by its consecutive ones (see Thresholds.Window).

// MaxWindow is the most probes a failure window holds: the bits of
// Recent.Failed.
const MaxWindow = 64

// Window is a failure window, as Cloudprober's {failures, total}: a check
// is Down once Failures of its last Probes probes failed, and Up once the
// window is healthy, fewer than Failures of its last Probes failed, which
// is known once Probes-Failures+1 of them succeeded. Until a window holds
// enough probes for either (after its first probes, a change of the check
// or a hand-over) it is Undecided. Probes is bounded to 1..MaxWindow and
// Failures to 1..Probes. The zero Window is none: the streaks decide.
type Window struct {
	// Failures is how many of the window's probes must fail to turn the
	// check down.
	Failures int
	// Probes is how many of the latest probes the window holds.
	Probes int
}

// Enabled reports whether w is a window: its Probes is above zero.
func (w Window) Enabled() bool { return w.Probes > 0 }

// size is how many probes w holds, within 1..MaxWindow.
func (w Window) size() int { return min(max(w.Probes, 1), MaxWindow) }

// failures is how many failures turn w down, within 1..size.
func (w Window) failures() int { return min(max(w.Failures, 1), w.size()) }

// Verdict is what a failure window establishes about a check.
type Verdict int8

const (
	// Undecided: the window holds too few probes to say; the state the
	// check had stays.
	Undecided Verdict = iota
	// Up: fewer than Window.Failures of the window's probes failed.
	Up
	// Down: at least Window.Failures of the window's probes failed.
	Down
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Up:
		return "Up"
	case Down:
		return "Down"
	}
	return "Undecided"
}

// Judge is w's verdict on the probes r holds. A disabled window is always
// Undecided.
func (w Window) Judge(r Recent) Verdict {
	if !w.Enabled() {
		return Undecided
	}
	c := r.Count(w)
	switch {
	case c.Failures >= w.failures():
		return Down
	case c.Probes-c.Failures > w.size()-w.failures():
		return Up
	}
	return Undecided
}

// record is r after a probe with result res, for the window w: nothing is
// kept (the zero Recent) when w is disabled.
func (w Window) record(r Recent, res probing.Result) Recent {
	if !w.Enabled() {
		return Recent{}
	}
	r.Failed <<= 1
	r.Len = min(r.Len+1, MaxWindow)
	if !res.Success {
		r.Failed |= 1
		r.FailureReason, r.FailureMessage = res.Reason, res.Message
	}
	if r.Failed == 0 {
		// The latest failure left every window: nothing to name.
		r.FailureReason, r.FailureMessage = "", ""
	}
	return r
}

// Recent is the verdicts of a check's latest probes, up to MaxWindow of
// them, kept with its Outcome when the check has a failure window: like
// Outcome.Streak, it holds the probes of this revision of the check since
// its outcome was last forgotten.
type Recent struct {
	// Failed has bit i set when the i-th probe before the latest failed:
	// bit 0 is the latest probe, bit Len-1 the oldest held.
	Failed uint64
	// Len is how many probes it holds, at most MaxWindow.
	Len int
	// FailureReason and FailureMessage are the Result.Reason and
	// Result.Message of the latest failed probe held; empty when none of
	// them failed.
	FailureReason  probing.Reason
	FailureMessage string
}

// WindowCount is how many probes a failure window holds and how many of
// them failed.
type WindowCount struct {
	Probes, Failures int
}

// Count counts the probes of r that the window w holds: the latest
// w.Probes of them (bounded to 1..MaxWindow), or all of them when r holds
// fewer.
func (r Recent) Count(w Window) WindowCount {
	n := min(w.size(), r.Len)
	mask := ^uint64(0)
	if n < MaxWindow {
		mask = 1<<n - 1
	}
	return WindowCount{Probes: n, Failures: bits.OnesCount64(r.Failed & mask)}
}
