package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/scheduler"
)

// TestWindowNotifiesWhenItsVerdictChanges: with a failure window of 2 of
// 4, the probe that changes the window's verdict is notified although its
// result equals the previous one, as a streak reaching its threshold is;
// probes that change neither the result nor the verdict are not.
func TestWindowNotifiesWhenItsVerdictChanges(t *testing.T) {
	w := scheduler.Window{Failures: 2, Probes: 4}
	h := newStreakHarness(t, scheduler.Thresholds{Failure: 1, Success: 1, Window: w})
	steps := []struct {
		success, notify bool
		verdict         scheduler.Verdict
		failures        int
	}{
		{true, true, scheduler.Undecided, 0}, // the first
		{true, false, scheduler.Undecided, 0},
		{true, true, scheduler.Up, 0}, // 3 of 4 succeeded: healthy
		{true, false, scheduler.Up, 0},
		{false, true, scheduler.Up, 1}, // a change, 1 of 4 failed
		{true, true, scheduler.Up, 1},  // a change
		{false, true, scheduler.Down, 2},
		{false, false, scheduler.Down, 3},
		{false, false, scheduler.Down, 3},
		{false, false, scheduler.Down, 4},
		{true, true, scheduler.Down, 3}, // a change
		{true, false, scheduler.Down, 2},
		{true, true, scheduler.Up, 1}, // 3 of 4 succeeded: healthy again
		{true, false, scheduler.Up, 0},
	}
	for i, s := range steps {
		o := h.probe(t, s.success, s.notify)
		assert.Equal(t, s.verdict, w.Judge(o.Recent), "verdict after probe %d", i)
		assert.Equal(t, scheduler.WindowCount{Probes: min(i+1, 4), Failures: s.failures}, o.Recent.Count(w), "count after probe %d", i)
	}
}

// TestHandOverForgetsTheWindow: a TakeOver and a Disown forget the probes
// held with the outcome, so the replica judges from the probes it makes
// since (the stored condition holds until they decide).
func TestHandOverForgetsTheWindow(t *testing.T) {
	w := scheduler.Window{Failures: 2, Probes: 3}
	for name, forget := range map[string]func(h *streakHarness, held scheduler.Outcome){
		"take-over": func(h *streakHarness, held scheduler.Outcome) { h.s.TakeOver(h.c.Key, held.Time) },
		"disown":    func(h *streakHarness, _ scheduler.Outcome) { h.s.Disown(h.c.Key) },
	} {
		t.Run(name, func(t *testing.T) {
			h := newStreakHarness(t, scheduler.Thresholds{Window: w})
			h.probe(t, false, true)
			held := h.probe(t, false, true) // 2 of 3: down
			require.Equal(t, scheduler.Down, w.Judge(held.Recent))

			forget(h, held)
			fresh := h.probe(t, false, true) // notified: the first since
			assert.Equal(t, scheduler.WindowCount{Probes: 1, Failures: 1}, fresh.Recent.Count(w))
			assert.Equal(t, scheduler.Undecided, w.Judge(fresh.Recent), "the window went on across the hand-over")
			assert.Equal(t, scheduler.Down, w.Judge(h.probe(t, false, true).Recent), "2 failures since")
		})
	}
}

// TestChangedWindowRestartsIt: a check whose window changes is a changed
// check: its outcome, and the probes its window held, are forgotten.
func TestChangedWindowRestartsIt(t *testing.T) {
	w := scheduler.Window{Failures: 1, Probes: 2}
	h := newStreakHarness(t, scheduler.Thresholds{Window: w})
	o := h.probe(t, false, true)
	require.Equal(t, scheduler.Down, w.Judge(o.Recent))

	wider := h.c
	wider.Thresholds.Window = scheduler.Window{Failures: 2, Probes: 4}
	h.s.Upsert(wider)
	// The changed check is due at once (no jitter here) and the fake
	// prober answers at once, so an outcome may already be back: then it
	// is the new revision's (its call was counted before its outcome was
	// stored), and the window it holds is fresh (checked below).
	if _, ok := h.s.Latest(h.c.Key); ok {
		assert.Equal(t, h.count+1, h.prober.numCalls(), "the outcome held under the old window survived")
	}
	h.step(0)
	h.count++
	h.waitCalls(h.count)
	fresh := h.waitLatest(h.c.Key, func(scheduler.Outcome) bool { return true }, "first probe of the changed check")
	assert.Equal(t, 1, fresh.Recent.Len)
	assert.Equal(t, scheduler.Undecided, wider.Thresholds.Window.Judge(fresh.Recent))
}
