package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

func TestGridArithmetic(t *testing.T) {
	const interval = 10 * time.Second
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) // a grid point of offset 0
	at := func(d time.Duration) time.Time { return base.Add(d) }
	for name, tc := range map[string]struct {
		t                      time.Time
		offset                 time.Duration
		atOrAfter, probe, skip time.Time
	}{
		"on the grid":             {at(0), 0, at(0), at(10 * time.Second), at(10 * time.Second)},
		"just after a grid point": {at(1), 0, at(interval), at(10 * time.Second), at(10 * time.Second)},
		"just before":             {at(-1), 0, at(0), at(10 * time.Second), at(0)},
		"offset, late by 4.9s":    {at(7900 * time.Millisecond), 3 * time.Second, at(13 * time.Second), at(13 * time.Second), at(13 * time.Second)},
		"offset, late by 5s":      {at(8 * time.Second), 3 * time.Second, at(13 * time.Second), at(13 * time.Second), at(13 * time.Second)},
		"offset, late by 5.1s":    {at(8100 * time.Millisecond), 3 * time.Second, at(13 * time.Second), at(23 * time.Second), at(13 * time.Second)},
		"before the Unix epoch": {
			time.Unix(-25, 0).UTC(), 2 * time.Second,
			time.Unix(-18, 0).UTC(), time.Unix(-18, 0).UTC(), time.Unix(-18, 0).UTC(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.atOrAfter, gridAtOrAfter(tc.t, interval, tc.offset), "gridAtOrAfter")
			assert.Equal(t, tc.probe, nextAfterProbe(tc.t, interval, tc.offset), "nextAfterProbe")
			assert.Equal(t, tc.skip, nextAfterSkip(tc.t, interval, tc.offset), "nextAfterSkip")
		})
	}
}

func TestNormalizePhase(t *testing.T) {
	const interval = 10 * time.Second
	for offset, want := range map[time.Duration]time.Duration{
		0: 0, 3 * time.Second: 3 * time.Second, interval: 0, 13 * time.Second: 3 * time.Second,
		-time.Second: 9 * time.Second, -interval: 0,
	} {
		assert.Equal(t, want, normalizePhase(offset, interval), "offset %v", offset)
	}
}

func TestHashPhase(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "example"}
	assert.Equal(t, time.Duration(xxhash.Sum64String("default/example")%uint64(time.Minute)), HashPhase(key, time.Minute))
	assert.Zero(t, HashPhase(key, 0))
	for i := range 1000 {
		key := types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("c-%d", i)}
		for _, interval := range []time.Duration{time.Second, 10 * time.Second, time.Hour} {
			p := HashPhase(key, interval)
			assert.GreaterOrEqual(t, p, time.Duration(0))
			assert.Less(t, p, interval)
			assert.Equal(t, p, HashPhase(key, interval), "deterministic")
		}
	}
}

// makeUpNow probes a gained check at once only when waiting for its next
// grid point could leave a gap longer than its interval plus the time the
// hand-over took. Grid: offset 0, interval 10 s; times relative to a grid
// point.
func TestMakeUpNow(t *testing.T) {
	const interval = 10 * time.Second
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	tests := []struct {
		name       string
		since, now time.Duration
		tolerance  time.Duration
		want       bool
	}{
		// A Lease deleted on shutdown, seen 0.5 s later (since = now − 1 s):
		// the turn at 10 s may have been missed, and waiting for 20 s
		// would leave 20 s since the turn at 0 s, where 11 s is the bound.
		{name: "graceful hand-over, turn in the window", since: 9500 * time.Millisecond, now: 10500 * time.Millisecond, want: true},
		// A crash: the last renewal seen at 1 s, the Lease expired at 11.5 s.
		// Waiting for 20 s leaves at most 20 s since the turn at 0 s,
		// within 10 s + 10.5 s: the owner most likely probed 10 s.
		{name: "crash, one turn in the window", since: time.Second, now: 11500 * time.Millisecond, want: false},
		// A crash right after a renewal written at 9.9 s and seen at
		// 10.1 s, the turn at 10 s missed, the Lease expired at 20.1 s,
		// after the turn at 20 s was skipped here. Reported as unprobed
		// since 9.1 s (seen, less the assigner's 1 s slack), the turn at
		// 10 s counts as missed: waiting for 30 s would leave 30 s. (From
		// 10.1 s, the instant it was seen, it would wait: a gap of 30 s
		// against a promise of 22 s.)
		{name: "crash right after a renewal seen late", since: 9100 * time.Millisecond, now: 20100 * time.Millisecond, want: true},
		// Two turns (10 s, 20 s) in a window longer than the interval:
		// waiting for 30 s would leave 30 s, over 10 s + 12 s.
		{name: "crash, two turns in the window", since: 9 * time.Second, now: 21 * time.Second, want: true},
		// The window starts on a grid point: that turn counts as missed.
		{name: "window starting on a grid point", since: 10 * time.Second, now: 10200 * time.Millisecond, want: true},
		// A join (the others stop when they see its Lease, acquired at
		// 9.5 s) that tolerates a lease duration of 10 s: waiting for 20 s
		// leaves at most 20 s, within 10 s + 10 s.
		{name: "join tolerating a lease duration", since: 9500 * time.Millisecond, now: 10500 * time.Millisecond, tolerance: 10 * time.Second, want: false},
		{name: "join tolerating less than an interval", since: 9500 * time.Millisecond, now: 10500 * time.Millisecond, tolerance: 5 * time.Second, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, makeUpNow(at(tt.now), at(tt.since), interval, 0, tt.tolerance))
		})
	}
}
