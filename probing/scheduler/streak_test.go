package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// streakHarness runs one check with thresholds on a fake clock, probed at
// t0, t0+10s, ... with the results the test sets one probe at a time.
type streakHarness struct {
	*harness
	c     scheduler.Check
	count int // probes finished so far
}

func newStreakHarness(t *testing.T, thresholds scheduler.Thresholds) *streakHarness {
	h := newHarness(t, func(_ *harness, o *scheduler.Options) { o.Rand = zeroRand })
	c := checkN(0, 1, 10*time.Second, "v1")
	c.Thresholds = thresholds
	h.s.Upsert(c)
	return &streakHarness{harness: h, c: c}
}

// probe runs the next probe with a success or a failure and waits for its
// outcome and, when notify, for its notification (then it returns the
// streak notified, which must be the outcome's); otherwise it checks that
// none came.
func (h *streakHarness) probe(t *testing.T, success, notify bool) scheduler.Outcome {
	t.Helper()
	res := probing.Result{Success: true, Reason: probing.ReasonSucceeded, StatusCode: 200}
	if !success {
		res = probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503}
	}
	return h.probeWith(t, res, notify)
}

// probeWith is probe with the result res.
func (h *streakHarness) probeWith(t *testing.T, res probing.Result, notify bool) scheduler.Outcome {
	t.Helper()
	h.prober.setResult(h.c.Target.URL(), res)
	before := len(h.notified())
	if h.count == 0 {
		h.start()
	} else {
		h.step(10 * time.Second)
	}
	h.count++
	h.waitCalls(h.count)
	want := t0.Add(time.Duration(h.count-1) * 10 * time.Second)
	o := h.waitLatest(h.c.Key, func(o scheduler.Outcome) bool { return o.Time.Equal(want) }, "outcome of probe %d", h.count)
	if !notify {
		time.Sleep(settle)
		assert.Len(t, h.notified(), before, "probe %d was notified", h.count)
		return o
	}
	require.Eventually(t, func() bool { return len(h.notified()) > before }, waitFor, poll, "probe %d was not notified", h.count)
	n := h.notified()
	require.Len(t, n, before+1)
	assert.Equal(t, o, n[before].Outcome, "the notified outcome")
	return o
}

// TestStreaksNotifyAtTheirThreshold: an outcome carries how many
// consecutive probes had its verdict, and the probe whose streak reaches
// the threshold of its verdict is notified although its outcome equals the
// previous one; longer streaks are not.
func TestStreaksNotifyAtTheirThreshold(t *testing.T) {
	h := newStreakHarness(t, scheduler.Thresholds{Failure: 3, Success: 2})
	steps := []struct {
		success, notify bool
		streak          int
	}{
		{true, true, 1}, // the first
		{true, true, 2}, // the success threshold
		{true, false, 3},
		{false, true, 1}, // a change
		{false, false, 2},
		{false, true, 3}, // the failure threshold
		{false, false, 4},
		{true, true, 1}, // a change
		{true, true, 2}, // the success threshold
	}
	for i, s := range steps {
		o := h.probe(t, s.success, s.notify)
		assert.Equal(t, s.streak, o.Streak, "streak of probe %d", i)
	}
}

// TestThresholdsOfOneNotifyOnlyChanges: with both thresholds at 1 (or
// unset) only changed outcomes are notified, as before thresholds existed.
func TestThresholdsOfOneNotifyOnlyChanges(t *testing.T) {
	for name, th := range map[string]scheduler.Thresholds{"unset": {}, "one": {Failure: 1, Success: 1}} {
		t.Run(name, func(t *testing.T) {
			h := newStreakHarness(t, th)
			h.probe(t, true, true)
			h.probe(t, true, false)
			h.probe(t, false, true)
			h.probe(t, false, false)
			h.probe(t, true, true)
		})
	}
}

// TestTakeOverForgetsTheHeldOutcome: the outcome held when the caller found
// another replica's write is forgotten with its streak, and the next probe
// is notified as a first one even though its result is the same; a
// TakeOver that saw an older outcome than the one held changes nothing.
func TestTakeOverForgetsTheHeldOutcome(t *testing.T) {
	h := newStreakHarness(t, scheduler.Thresholds{Failure: 3, Success: 1})
	h.probe(t, false, true)
	held := h.probe(t, false, false)
	require.Equal(t, 2, held.Streak)

	h.s.TakeOver(h.c.Key, held.Time.Add(-time.Second)) // saw an older one
	o, ok := h.s.Latest(h.c.Key)
	require.True(t, ok, "a newer outcome than the one seen was forgotten")
	assert.Equal(t, held, o)

	h.s.TakeOver(h.c.Key, held.Time)
	_, ok = h.s.Latest(h.c.Key)
	assert.False(t, ok, "the held outcome survived the take-over")

	fresh := h.probe(t, false, true) // notified: the first after the take-over
	assert.Equal(t, 1, fresh.Streak, "the streak went on across the take-over")
	third := h.probe(t, false, false) // not the threshold of 3 either
	assert.Equal(t, 2, third.Streak)
}

// TestDisownForgetsTheStreak: a check lost and gained back starts a new
// streak.
func TestDisownForgetsTheStreak(t *testing.T) {
	h := newStreakHarness(t, scheduler.Thresholds{Failure: 2, Success: 1})
	h.probe(t, false, true)
	h.s.Disown(h.c.Key)
	o := h.probe(t, false, true)
	assert.Equal(t, 1, o.Streak, "the streak survived Disown")
}
