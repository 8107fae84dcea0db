package scheduler_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing/scheduler"
)

// 7. Checks that this replica does not own stay scheduled but are not probed.
func TestOwnership(t *testing.T) {
	own := &switchOwner{}
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Owns = own.Owns
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)
	h.start()

	for range 3 {
		h.settle()
		h.step(10 * time.Second)
	}
	h.settle()
	assert.Zero(t, h.prober.numCalls(), "not owned: no probes")
	assert.Positive(t, own.asked.Load(), "ownership consulted")
	assert.Equal(t, 1, h.s.Len(), "still scheduled")

	own.owns.Store(true)
	h.step(10 * time.Second)
	h.waitCalls(1)
	assert.Equal(t, t0.Add(40*time.Second), h.prober.allCalls()[0].At)
	h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true }, "outcome once owned")

	own.owns.Store(false)
	h.step(10 * time.Second)
	h.settle()
	assert.Equal(t, 1, h.prober.numCalls(), "not owned again: no probes")
}

// Ownership is asked again after the wait for a worker slot: a check whose
// ownership moved away meanwhile is not probed.
func TestOwnershipAskedRightBeforeTheProbe(t *testing.T) {
	var owned atomic.Bool
	var askedB atomic.Int64
	a, b := checkN(0, 1, 10*time.Second, "v1"), checkN(1, 1, 10*time.Second, "v1")
	// Another namespace: b waits for the worker, not for a's namespace to
	// free one of its slots.
	b.Key.Namespace = "other"
	owned.Store(true)
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Workers = 1
		o.Owns = func(key types.NamespacedName, _ int, _ time.Time) bool {
			if key == b.Key {
				askedB.Add(1)
				return owned.Load()
			}
			return true
		}
	})
	release := h.prober.block(a.Target.URL(), false)
	defer release()
	h.s.Upsert(a)
	h.start()
	h.waitCallsTo(a.Target.URL(), 1) // the only worker is busy

	h.s.Upsert(b) // due at once: owned, then waits for the worker
	require.Eventually(t, func() bool { return askedB.Load() == 1 }, waitFor, poll)
	owned.Store(false)
	release()
	h.settle()
	assert.Equal(t, int64(2), askedB.Load(), "asked again once a worker was free")
	assert.Empty(t, h.prober.callsTo(b.Target.URL()), "no longer owned: not probed")

	owned.Store(true)
	h.step(10 * time.Second)
	h.waitCallsTo(b.Target.URL(), 1)
	assert.Equal(t, t0.Add(10*time.Second), h.prober.callsTo(b.Target.URL())[0].At, "still scheduled")
}

// Disown cancels the probe in flight and forgets the outcome, and keeps the
// check on its grid: once owned again it is probed at its next grid point
// without another Upsert, and only that probe's outcome is reported.
func TestDisownStopsAtOnceAndKeepsTheGrid(t *testing.T) {
	own := &switchOwner{}
	own.owns.Store(true)
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Phase = zeroPhase
		o.Owns = own.Owns
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)
	h.start()
	h.waitCalls(1)
	h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true }, "first outcome")

	// The next probe hangs; the check is lost while it runs.
	release := h.prober.block(c.Target.URL(), false)
	defer release()
	h.step(10 * time.Second)
	h.waitCalls(2)
	own.owns.Store(false)
	h.s.Disown(c.Key)
	require.Eventually(t, func() bool { return h.prober.cancelledCount(c.Target.URL()) == 1 }, waitFor, poll,
		"the probe in flight was not cancelled")
	h.settle()
	_, ok := h.s.Latest(c.Key)
	assert.False(t, ok, "the outcome from before the loss is still held")
	st, ok := stateOf(t, h.s, c.Key)
	require.True(t, ok, "Disown removed the check")
	assert.False(t, st.HasOutcome)
	release()

	h.step(10 * time.Second) // t0+20s: not owned, skipped
	h.settle()
	assert.Equal(t, 2, h.prober.numCalls())

	own.owns.Store(true)
	h.step(10 * time.Second) // t0+30s: owned again, on the grid
	h.waitCalls(3)
	assert.Equal(t, t0.Add(30*time.Second), h.prober.allCalls()[2].At)
	got := h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true }, "outcome after the comeback")
	assert.Equal(t, t0.Add(30*time.Second), got.Time)

	h.s.Disown(keyN(99)) // unknown: no-op
	assert.Equal(t, 1, h.s.Len())
}

// skippedTwice starts a harness with one check (interval 10 s, phase 0)
// that this replica does not own, at t0+10s: its turns at t0 and t0+10s
// were skipped.
func skippedTwice(t *testing.T) (*harness, *switchOwner, scheduler.Check) {
	t.Helper()
	own := &switchOwner{}
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Phase = zeroPhase
		o.Owns = own.Owns
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c)
	h.start()
	h.settle() // t0: not owned, skipped
	h.step(10 * time.Second)
	h.settle() // t0+10s: skipped again
	return h, own, c
}

// A gained check whose turn was skipped here since the moment given is
// probed at once (its previous owner may have missed that turn), then on
// its grid again, unless waiting for its next grid point keeps the gap
// within its interval plus the time the hand-over took; one whose skipped
// turns all came before is probed at its next grid point.
func TestGainedMakesUpAMissedTurn(t *testing.T) {
	tests := []struct {
		name string
		// since is unprobedSince, relative to t0.
		since time.Duration
		// tolerance is the longer gap the caller accepts.
		tolerance time.Duration
		// want is when the first probe after the gain comes, relative to
		// t0.
		want time.Duration
	}{
		{name: "skipped turn after the owner may have stopped: probed now", since: 5 * time.Second, want: 13 * time.Second},
		{name: "skipped turn before: next grid point", since: 11 * time.Second, want: 20 * time.Second},
		// Turn 10 s skipped after 1 s, but if the owner last probed 0 s,
		// waiting for 20 s leaves 20 s, within 10 s + (13 s - 1 s).
		{name: "waiting keeps the gap within interval plus the hand-over: next grid point", since: time.Second, want: 20 * time.Second},
		{name: "skipped turn after the owner may have stopped, gap tolerated: next grid point", since: 5 * time.Second, tolerance: 10 * time.Second, want: 20 * time.Second},
		{name: "nothing known (start-up): next grid point", since: -1, want: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, own, c := skippedTwice(t)
			h.step(3 * time.Second)
			h.settle()
			require.Zero(t, h.prober.numCalls())

			own.owns.Store(true)
			since := time.Time{}
			if tt.since >= 0 {
				since = t0.Add(tt.since)
			}
			h.s.Gained(c.Key, since, tt.tolerance)
			if tt.want == 13*time.Second {
				h.waitCalls(1)
			} else {
				h.settle()
				require.Zero(t, h.prober.numCalls(), "probed before its next grid point")
				h.step(7 * time.Second)
				h.waitCalls(1)
			}
			assert.Equal(t, t0.Add(tt.want), h.prober.allCalls()[0].At)

			// Back on the grid: the next probe at the first grid point at
			// least half an interval later.
			next := 30 * time.Second
			if tt.want < 20*time.Second {
				next = 20 * time.Second
			}
			h.step(next - tt.want - time.Millisecond)
			h.settle()
			require.Equal(t, 1, h.prober.numCalls(), "probed before the grid point")
			h.step(time.Millisecond)
			h.waitCalls(2)
			assert.Equal(t, t0.Add(next), h.prober.allCalls()[1].At)
		})
	}
}

// A check scheduled while another replica owned it, and gained before its
// first (jittered) probe came due here from a replica that stays (this one
// joined: the gap it accepts is a lease duration), is probed on its grid,
// not at once as a new check: its previous owner probed it on that grid.
func TestGainedBeforeTheFirstProbeGoesOnTheGrid(t *testing.T) {
	own := &switchOwner{}
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = func(n int64) int64 { return n - 1 } // the latest first probe: about a second after the Upsert
		o.InitialJitter = time.Second
		o.Phase = zeroPhase
		o.Owns = own.Owns
	})
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c) // first probe due about a second after t0
	h.start()
	h.settle()

	own.owns.Store(true)
	h.s.Gained(c.Key, t0, 10*time.Second)
	h.step(2 * time.Second) // t0+2s: past the first probe's due time
	h.settle()
	require.Zero(t, h.prober.numCalls(), "probed at once as a new check")
	h.step(8 * time.Second) // t0+10s: the next grid point
	h.waitCalls(1)
	assert.Equal(t, t0.Add(10*time.Second), h.prober.allCalls()[0].At)
}

// A check probed on its grid between the ring change (Owns true) and the
// Gained call that reports it is not probed again to make up a turn.
func TestGainedAfterAProbeMakesNothingUp(t *testing.T) {
	h, own, c := skippedTwice(t)
	own.owns.Store(true)
	h.step(10 * time.Second) // t0+20s: owned, probed on the grid
	h.waitCalls(1)
	h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true }, "the grid probe's outcome")
	h.s.Gained(c.Key, t0.Add(5*time.Second), 0) // the turn at t0+10s may have been missed
	h.step(time.Second)
	h.settle()
	assert.Equal(t, 1, h.prober.numCalls(), "made up a turn after a probe")
}

// A check probed since the ring change whose outcome a take-over then
// forgot (the reconciler found the previous owner's status) still counts
// as probed: a later Gained makes no turn up.
func TestGainedAfterATakeOverMakesNothingUp(t *testing.T) {
	h, own, c := skippedTwice(t)
	own.owns.Store(true)
	h.step(10 * time.Second) // t0+20s: owned, probed on the grid
	h.waitCalls(1)
	held := h.waitLatest(c.Key, func(scheduler.Outcome) bool { return true }, "the grid probe's outcome")
	h.s.TakeOver(c.Key, held.Time)
	h.s.Gained(c.Key, t0.Add(5*time.Second), 0)
	h.step(time.Second)
	h.settle()
	assert.Equal(t, 1, h.prober.numCalls(), "made up a turn after a probe whose outcome a take-over forgot")
}

// A check scheduled here shortly before (this replica just started), and
// gained from a replica that died before a turn of its grid came, is
// probed at once: this replica skipped none of the turns its previous
// owner missed, since it did not have the check yet, but the grid says
// that waiting would leave a gap of more than an interval and the
// hand-over's length.
func TestGainedFromADeadOwnerRightAfterTheUpsert(t *testing.T) {
	own := &switchOwner{}
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Rand = zeroRand
		o.Phase = zeroPhase
		o.Owns = own.Owns
	})
	h.start()
	h.clock.Step(12 * time.Second) // t0+12s: the turn at t0+10s came before the check was scheduled here
	c := checkN(0, 1, 10*time.Second, "v1")
	h.s.Upsert(c) // its first (jittered) turn, skipped: not owned
	h.settle()
	require.Zero(t, h.prober.numCalls())

	// The previous owner was last seen at t0+8s, before the turn at
	// t0+10s, and has gone: waiting for t0+20s could leave 20 s unprobed.
	own.owns.Store(true)
	h.s.Gained(c.Key, t0.Add(8*time.Second), 0)
	h.waitCalls(1)
	assert.Equal(t, t0.Add(12*time.Second), h.prober.allCalls()[0].At, "made up at once")
}

// StoppedProbing gives the instant from which a stopped scheduler started
// no probe of a check it owned: when it stopped, or the due time of the
// earliest owned turn it had not started by then (waiting for a worker, or
// set aside for a namespace slot). A replica that hands its checks over on
// shutdown gives it to the others, who take over from exactly there.
func TestStoppedProbing(t *testing.T) {
	// later is a check upserted (so due at once) at offset after t0.
	type later struct {
		i         int
		offset    time.Duration
		owned     bool
		namespace string // "" for the namespace of check 0
		// popped: the dispatcher takes the turn (asks who owns it) before
		// the clock moves on; a turn behind one waiting for a worker stays
		// queued, and one set aside is not asked about.
		popped bool
	}
	const stopAt = 3 * time.Second
	tests := map[string]struct {
		workers int
		share   float64
		later   []later
		want    time.Duration // after t0
	}{
		"nothing late: when it stopped": {workers: 1, want: stopAt},
		"an owned turn waiting for a worker, another queued behind it": {workers: 1,
			later: []later{{i: 1, offset: time.Second, owned: true, namespace: "other", popped: true}, {i: 2, offset: 2 * time.Second, owned: true, namespace: "other"}},
			want:  time.Second},
		"turns of checks not owned do not count": {workers: 1,
			later: []later{{i: 1, offset: time.Second, namespace: "other", popped: true}, {i: 2, offset: 2 * time.Second, namespace: "other", popped: true}},
			want:  stopAt},
		// The dispatcher sets the turn of check 1 aside before it asks
		// about check 2, which a worker then probes.
		"an owned turn set aside for its namespace's slot": {workers: 2, share: 0.5,
			later: []later{{i: 1, offset: time.Second, owned: true}, {i: 2, offset: 2 * time.Second, owned: true, namespace: "other", popped: true}},
			want:  time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			owned := map[types.NamespacedName]bool{keyN(0): true}
			var asked sync.Map // keys the dispatcher asked about
			checks := []scheduler.Check{checkN(0, 1, 10*time.Second, "v1")}
			for _, l := range tc.later {
				c := checkN(l.i, 1, 10*time.Second, "v1")
				if l.namespace != "" {
					c.Key.Namespace = l.namespace
				}
				owned[c.Key] = l.owned
				checks = append(checks, c)
			}
			h := newHarness(t, func(_ *harness, o *scheduler.Options) {
				o.Rand = zeroRand
				o.Workers = tc.workers
				o.NamespaceShare = tc.share
				o.Owns = func(key types.NamespacedName, _ int, _ time.Time) bool {
					asked.Store(key, true)
					return owned[key]
				}
			})
			release := h.prober.block(checks[0].Target.URL(), false)
			defer release()
			h.s.Upsert(checks[0])
			h.start()
			h.waitCallsTo(checks[0].Target.URL(), 1) // in flight until the stop
			for i, l := range tc.later {
				h.clock.SetTime(t0.Add(l.offset))
				h.s.Upsert(checks[i+1])
				if l.popped {
					key := checks[i+1].Key
					require.Eventually(t, func() bool { _, ok := asked.Load(key); return ok }, waitFor, poll, "turn of %s not taken", key)
				}
			}
			h.clock.SetTime(t0.Add(stopAt))
			h.stop()

			at, ok := h.s.StoppedProbing(t.Context())
			require.True(t, ok)
			assert.Equal(t, t0.Add(tc.want), at)
		})
	}
}

// StoppedProbing waits for the scheduler to stop, within its context.
func TestStoppedProbingWaits(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	ctx, cancel := context.WithTimeout(t.Context(), settle)
	defer cancel()
	_, ok := h.s.StoppedProbing(ctx)
	assert.False(t, ok, "still running")
	h.clock.SetTime(t0.Add(time.Second))
	h.stop()
	at, ok := h.s.StoppedProbing(t.Context())
	require.True(t, ok)
	assert.Equal(t, t0.Add(time.Second), at)
}

// Resume after a fencing that was never a change of the ring makes up the
// turn an owned check skipped while it lasted (due at or after the
// instant given, no probe started since): nobody else probed it. A turn
// skipped before that instant, and a check that skipped none, wait for
// their next grid point.
func TestResumeMakesUpTurnsSkippedWhileFenced(t *testing.T) {
	tests := map[string]struct {
		// since is Resume's instant, relative to t0; the turn at t0+7s
		// was skipped.
		since time.Duration
		// probes are when the check that skipped a turn is probed up to
		// its grid point at t0+17s, relative to t0.
		probes []time.Duration
	}{
		"turn skipped since: probed now, then on its grid": {since: 6 * time.Second, probes: []time.Duration{0, 8 * time.Second, 17 * time.Second}},
		"turn skipped at the instant: probed now":          {since: 7 * time.Second, probes: []time.Duration{0, 8 * time.Second, 17 * time.Second}},
		"turn skipped before: next grid point":             {since: 7500 * time.Millisecond, probes: []time.Duration{0, 17 * time.Second}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			own := &switchOwner{}
			own.owns.Store(true)
			skipping, steady := checkN(0, 1, 10*time.Second, "v1"), checkN(1, 1, 10*time.Second, "v1")
			h := newHarness(t, func(_ *harness, o *scheduler.Options) {
				o.InitialJitter = -1
				o.Owns = own.Owns
				o.Phase = func(key types.NamespacedName, _ time.Duration) time.Duration {
					if key == skipping.Key {
						return 7 * time.Second
					}
					return 0
				}
			})
			h.s.Upsert(skipping)
			h.s.Upsert(steady)
			h.start()
			h.waitCalls(2) // both at t0; next turns at t0+7s and t0+10s

			h.step(6 * time.Second) // t0+6s: fenced
			own.owns.Store(false)
			h.step(time.Second) // t0+7s: skipped
			h.settle()
			require.Equal(t, 2, h.prober.numCalls(), "probed while fenced")
			h.step(time.Second) // t0+8s: the fencing ends
			own.owns.Store(true)
			h.s.Resume(t0.Add(tt.since))
			if len(tt.probes) == 3 {
				h.waitCallsTo(urlN(0, "v1"), 2) // made up now
			}

			h.step(2 * time.Second) // t0+10s: the steady check on its grid
			h.waitCallsTo(urlN(1, "v1"), 2)
			assert.Equal(t, t0.Add(10*time.Second), h.prober.callsTo(urlN(1, "v1"))[1].At, "a check that skipped nothing made up a turn")
			h.step(7 * time.Second) // t0+17s: its next grid point
			h.waitCallsTo(urlN(0, "v1"), len(tt.probes))
			var at []time.Duration
			for _, c := range h.prober.callsTo(urlN(0, "v1")) {
				at = append(at, c.At.Sub(t0))
			}
			assert.Equal(t, tt.probes, at, "probes of the check that skipped a turn, from t0")
		})
	}
}
