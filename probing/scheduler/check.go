package scheduler

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
)

// Check is everything the Scheduler needs to know about one checker.
type Check struct {
	// Key identifies the checker object.
	Key types.NamespacedName
	// Generation is the object's metadata.generation; it is echoed in every
	// Outcome of this check.
	Generation int64
	// Interval is the time between two probes. It must be positive; a
	// non-positive value is replaced by FallbackInterval.
	Interval time.Duration
	// Target is what to probe. It may be the zero Target when this
	// replica does not probe the check and the Scheduler has a Builder:
	// the check is kept on its grid without what its probes need, and
	// built by the Builder when one of its turns finds it owned (see
	// Scheduler.SetBuilder).
	Target probing.Target
	// VantagePoints is how many replicas probe the check (see the
	// WebChecker's spec.vantagePoints); Options.Owns is asked with it.
	// Values below 1 mean 1.
	VantagePoints int
	// Thresholds say how long a streak must be to change the checker's
	// state: the probe that completes one is notified (see Outcome.Streak).
	Thresholds Thresholds
}

// equal reports whether c and o describe the same check: an Upsert of an
// equal check is a no-op.
func (c Check) equal(o Check) bool {
	return c.sameSchedule(o) && c.Target.Equal(o.Target)
}

// sameSchedule reports whether c and o are the same revision of a check
// but for their targets: an Upsert that only builds a target, or drops
// it, keeps the check's schedule and outcome.
func (c Check) sameSchedule(o Check) bool {
	return c.Key == o.Key && c.Generation == o.Generation && c.Interval == o.Interval &&
		c.VantagePoints == o.VantagePoints && c.Thresholds == o.Thresholds
}

// Thresholds are how many consecutive probes with one verdict change a
// checker's state, as a kubelet probe's failureThreshold and
// successThreshold, or the failure window that decides instead. Values
// below 1 mean 1.
type Thresholds struct {
	// Failure is how many consecutive failed probes turn it down.
	Failure int
	// Success is how many consecutive successful probes turn it up.
	Success int
	// Window, when enabled, judges the check by its latest probes
	// (Outcome.Recent) instead: the probe that changes its verdict is
	// notified, as one whose streak reaches its threshold.
	Window Window
}

// For is the threshold of a streak of successes (success) or failures.
func (t Thresholds) For(success bool) int {
	n := t.Failure
	if success {
		n = t.Success
	}
	return max(n, 1)
}

// Outcome is the result of the latest completed probe of a check.
type Outcome struct {
	// Key identifies the checker object.
	Key types.NamespacedName
	// Generation is the Check.Generation the probe was run for.
	Generation int64
	// Result is what the prober reported, but for two things: its
	// FinalURL is cleared (the scheduler keeps a hash of it, see Change),
	// and the message of a failure that follows a change of the target
	// within ChangeHorizon says so at its end ("(certificate changed 4m
	// before)"), the same ending for every failure of its streak.
	Result probing.Result
	// Time is when the probe finished, read from the scheduler's clock.
	Time time.Time
	// Streak counts the consecutive probes of this revision of the check,
	// this one included, whose Result.Success is the same as this one's,
	// since its outcome was last forgotten (Upsert of a changed check,
	// Disown, TakeOver): the prober worker's count of a kubelet probe.
	Streak int
	// Recent holds the verdicts of the latest probes counted as Streak
	// is, this one included, when the check has a failure window
	// (Thresholds.Window); the zero Recent otherwise.
	Recent Recent
	// Overran is set when a turn of the check was skipped because its
	// previous probe still ran, during this probe or one started less than
	// PaceHold intervals before it: the check's probes take longer than
	// its interval allows, and it is probed less often than asked.
	Overran bool
	// Behind is set when this probe, or one of the check's started less
	// than PaceHold intervals before it, started late: it waited because
	// the replica's bound on probes in flight (or its namespace's share of
	// it) was reached, or it started more than LateThreshold after it was
	// due. The replica cannot keep up with its checks.
	Behind bool
	// Change is the latest change of what the probes of this revision of
	// the check saw of its target (addresses, certificate, final redirect
	// location), on every outcome from the one that saw it on; nil while
	// there was none. An outcome that carries another Change than the one
	// before it is notified. It is forgotten as the streak is.
	Change *TargetChange
}

// Reached reports whether o's streak is at least as long as the threshold
// of its verdict: the state it stands for is established.
func (o Outcome) Reached(t Thresholds) bool {
	return o.Streak >= t.For(o.Result.Success)
}

// changedFrom reports whether o must be notified given the previously stored
// outcome prev: a new generation, another result, a change of whether
// the check's turns are kept (Overran, Behind), or a new change of the
// target.
func (o Outcome) changedFrom(prev Outcome) bool {
	return prev.Generation != o.Generation || !prev.Result.SameOutcome(o.Result) ||
		prev.Overran != o.Overran || prev.Behind != o.Behind || prev.Change != o.Change
}

// ProbeCounts counts the stored outcomes of a check, by success.
type ProbeCounts struct {
	Successes, Failures uint64
}

// CheckState is what a Scheduler knows of one check at a moment: see
// Scheduler.Snapshot.
type CheckState struct {
	// Key identifies the checker object.
	Key types.NamespacedName
	// VantagePoints is the check's Check.VantagePoints.
	VantagePoints int
	// Outcome is the latest stored outcome; valid only when HasOutcome.
	Outcome    Outcome
	HasOutcome bool
	// Counts counts the outcomes stored since the check was added; they
	// survive changes of the check (Upsert) but not Remove.
	Counts ProbeCounts
}
