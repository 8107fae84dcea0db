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
// t0, t0+10s, ...
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
	h.start()
	return &streakHarness{harness: h, c: c}
}

// probe sets the next result (a success, or a failure) and waits for its
// outcome.
func (h *streakHarness) probe(t *testing.T, success bool) scheduler.Outcome {
	t.Helper()
	res := probing.Result{Success: true, Reason: probing.ReasonSucceeded, StatusCode: 200}
	if !success {
		res = probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503}
	}
	h.prober.setResult(h.c.Target.URL(), res)
	if h.count > 0 {
		h.step(10 * time.Second)
	}
	h.count++
	h.waitCalls(h.count)
	want := t0.Add(time.Duration(h.count-1) * 10 * time.Second)
	return h.waitLatest(h.c.Key, func(o scheduler.Outcome) bool { return o.Time.Equal(want) }, "outcome of probe %d", h.count)
}

// streaks returns the streaks of the notified outcomes.
func (h *streakHarness) streaks(t *testing.T, want int) []int {
	t.Helper()
	require.Eventually(t, func() bool { return len(h.notified()) >= want }, waitFor, poll)
	time.Sleep(settle)
	var got []int
	for _, n := range h.notified() {
		got = append(got, n.Outcome.Streak)
	}
	return got
}

// TestStreaksNotifyAtTheirThreshold: an outcome carries how many
// consecutive probes had its verdict, and the probe whose streak reaches
// the threshold of its verdict is notified although its outcome equals the
// previous one; longer streaks are not.
func TestStreaksNotifyAtTheirThreshold(t *testing.T) {
	h := newStreakHarness(t, scheduler.Thresholds{Failure: 3, Success: 2})
	verdicts := []bool{true, true, true, false, false, false, false, true, true}
	wantStreaks := []int{1, 2, 3, 1, 2, 3, 4, 1, 2}
	for i, v := range verdicts {
		o := h.probe(t, v)
		assert.Equal(t, wantStreaks[i], o.Streak, "streak of probe %d", i)
	}
	// Notified: the first, the second success (threshold 2), the first
	// failure (a change), the third (threshold 3), the recovery, its second
	// success.
	assert.Equal(t, []int{1, 2, 1, 3, 1, 2}, h.streaks(t, 6))
}

// TestThresholdsOfOneNotifyOnlyChanges: with both thresholds at 1 (or
// unset) only changed outcomes are notified, as before thresholds existed.
func TestThresholdsOfOneNotifyOnlyChanges(t *testing.T) {
	for name, th := range map[string]scheduler.Thresholds{"unset": {}, "one": {Failure: 1, Success: 1}} {
		t.Run(name, func(t *testing.T) {
			h := newStreakHarness(t, th)
			for _, v := range []bool{true, true, false, false, true} {
				h.probe(t, v)
			}
			assert.Equal(t, []int{1, 1, 1}, h.streaks(t, 3))
		})
	}
}

// TestTakeOverForgetsTheHeldOutcome: the outcome held when the caller found
// another replica's write is forgotten with its streak, and the next probe
// is notified as a first one even though its result is the same; a
// TakeOver that saw an older outcome than the one held changes nothing.
func TestTakeOverForgetsTheHeldOutcome(t *testing.T) {
	h := newStreakHarness(t, scheduler.Thresholds{Failure: 3, Success: 1})
	h.probe(t, false)
	held := h.probe(t, false)
	require.Equal(t, 2, held.Streak)

	h.s.TakeOver(h.c.Key, held.Time.Add(-time.Second)) // saw an older one
	o, ok := h.s.Latest(h.c.Key)
	require.True(t, ok, "a newer outcome than the one seen was forgotten")
	assert.Equal(t, held, o)

	h.s.TakeOver(h.c.Key, held.Time)
	_, ok = h.s.Latest(h.c.Key)
	assert.False(t, ok, "the held outcome survived the take-over")

	fresh := h.probe(t, false)
	assert.Equal(t, 1, fresh.Streak, "the streak went on across the take-over")
	third := h.probe(t, false)
	assert.Equal(t, 2, third.Streak)
	// Notified: the first probe, the first after the take-over; never the
	// threshold of 3, which the take-over put off.
	assert.Equal(t, []int{1, 1}, h.streaks(t, 2))
}

// TestDisownForgetsTheStreak: a check lost and gained back starts a new
// streak.
func TestDisownForgetsTheStreak(t *testing.T) {
	h := newStreakHarness(t, scheduler.Thresholds{Failure: 2, Success: 1})
	h.probe(t, false)
	h.s.Disown(h.c.Key)
	o := h.probe(t, false)
	assert.Equal(t, 1, o.Streak, "the streak survived Disown")
}
