package scheduler

import (
	"time"

	"github.com/cespare/xxhash/v2"
	"k8s.io/apimachinery/pkg/types"
)

// The phase of a check: where within its interval it is probed. Pure
// functions of the key, the interval and a time; they never read a clock.

// HashPhase is the default Options.Phase: the 64-bit xxhash (XXH64, seed 0)
// of "namespace/name", modulo interval, as Prometheus derives a target's
// scrape offset from its hash. It depends on nothing but its arguments, so
// every replica puts a check at the same phase. It returns 0 for a
// non-positive interval.
func HashPhase(key types.NamespacedName, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	return time.Duration(xxhash.Sum64String(key.Namespace+"/"+key.Name) % uint64(interval))
}

// normalizePhase reduces offset into [0, interval); interval must be
// positive.
func normalizePhase(offset, interval time.Duration) time.Duration {
	offset %= interval
	if offset < 0 {
		offset += interval
	}
	return offset
}

// gridAtOrAfter returns the first point of the grid
// { Unix epoch + k·interval + offset } at or after t. interval must be
// positive and offset in [0, interval). The result keeps t's location and
// monotonic reading.
func gridAtOrAfter(t time.Time, interval, offset time.Duration) time.Time {
	r := (t.UnixNano() - int64(offset)) % int64(interval)
	if r < 0 {
		r += int64(interval)
	}
	if r == 0 {
		return t
	}
	return t.Add(interval - time.Duration(r))
}

// nextAfterProbe returns the due time of the turn after a probe started at
// start: the first grid point at least interval/2 after start. In steady
// state (start on a grid point, or late by less than interval/2) that is
// one interval after the grid point of the probe; after the first probe of
// a check, or a late one, the gap is between interval/2 and 1.5·interval,
// and there is never a burst of catch-up probes.
func nextAfterProbe(start time.Time, interval, offset time.Duration) time.Time {
	return gridAtOrAfter(start.Add(max(interval/2, 1)), interval, offset)
}

// nextAfterSkip returns the due time of the turn after one skipped at now
// (not probed: not owned, or the previous probe still runs): the first grid
// point after now.
func nextAfterSkip(now time.Time, interval, offset time.Duration) time.Time {
	return gridAtOrAfter(now.Add(1), interval, offset)
}

// makeUpNow tells whether a check gained at now, whose previous owner may
// have stopped probing at since, must be probed at once rather than at its
// next grid point. The worst case is that the previous owner probed the
// last turn before since and none after: waiting then leaves a gap from
// that turn to the next grid point after now, and probing now one of at
// most interval + (now − since). It probes now only when waiting could do
// worse than that, or than interval + tolerance if that is longer.
func makeUpNow(now, since time.Time, interval, offset, tolerance time.Duration) bool {
	lastSure := gridAtOrAfter(since, interval, offset).Add(-interval)
	next := nextAfterSkip(now, interval, offset)
	return next.Sub(lastSure) > interval+max(now.Sub(since), tolerance)
}
