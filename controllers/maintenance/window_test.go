package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func recurring(t *testing.T, expr string, d time.Duration, zone string) Window {
	t.Helper()
	s, err := ParseSchedule(expr)
	require.NoError(t, err)
	loc, err := Location(zone)
	require.NoError(t, err)
	return Window{Schedule: &s, Duration: d, Location: loc}
}

func utc(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, time.UTC)
}

func TestActive(t *testing.T) {
	nightly := func(t *testing.T) Window { return recurring(t, "0 2 * * *", 2*time.Hour, "") }
	for name, tc := range map[string]struct {
		windows    func(t *testing.T) []Window
		now        time.Time
		wantActive bool
		wantNext   time.Time
	}{
		"no windows":  {func(*testing.T) []Window { return nil }, utc(2026, 12, 2, 3, 0), false, time.Time{}},
		"zero window": {func(*testing.T) []Window { return []Window{{}} }, utc(2026, 12, 2, 3, 0), false, time.Time{}},
		"before a nightly window": {func(t *testing.T) []Window { return []Window{nightly(t)} },
			utc(2026, 12, 2, 1, 0), false, utc(2026, 12, 2, 2, 0)},
		"at its start": {func(t *testing.T) []Window { return []Window{nightly(t)} },
			utc(2026, 12, 2, 2, 0), true, utc(2026, 12, 2, 4, 0)},
		"inside it": {func(t *testing.T) []Window { return []Window{nightly(t)} },
			utc(2026, 12, 2, 3, 59), true, utc(2026, 12, 2, 4, 0)},
		"at its end": {func(t *testing.T) []Window { return []Window{nightly(t)} },
			utc(2026, 12, 2, 4, 0), false, utc(2026, 12, 3, 2, 0)},
		"in a time zone": {func(t *testing.T) []Window { return []Window{recurring(t, "0 2 * * *", time.Hour, "Europe/Berlin")} },
			utc(2026, 12, 2, 1, 30), true, utc(2026, 12, 2, 2, 0)},
		"overlapping recurrences: ask again at the end of the one covering now": {func(t *testing.T) []Window { return []Window{recurring(t, "0 * * * *", 90*time.Minute, "")} },
			utc(2026, 12, 2, 1, 30), true, utc(2026, 12, 2, 2, 30)},
		"one-off, before": {func(*testing.T) []Window {
			return []Window{{Start: utc(2026, 12, 24, 0, 0), End: utc(2026, 12, 27, 0, 0)}}
		},
			utc(2026, 12, 2, 0, 0), false, utc(2026, 12, 24, 0, 0)},
		"one-off, inside": {func(*testing.T) []Window {
			return []Window{{Start: utc(2026, 12, 24, 0, 0), End: utc(2026, 12, 27, 0, 0)}}
		},
			utc(2026, 12, 25, 0, 0), true, utc(2026, 12, 27, 0, 0)},
		"one-off, over": {func(*testing.T) []Window {
			return []Window{{Start: utc(2026, 12, 24, 0, 0), End: utc(2026, 12, 27, 0, 0)}}
		},
			utc(2026, 12, 27, 0, 0), false, time.Time{}},
		"one-off ending before it starts": {func(*testing.T) []Window {
			return []Window{{Start: utc(2026, 12, 27, 0, 0), End: utc(2026, 12, 24, 0, 0)}}
		},
			utc(2026, 12, 2, 0, 0), false, time.Time{}},
		"the earliest start of several": {func(t *testing.T) []Window {
			return []Window{nightly(t), {Start: utc(2026, 12, 2, 1, 0), End: utc(2026, 12, 2, 1, 30)}}
		}, utc(2026, 12, 2, 0, 0), false, utc(2026, 12, 2, 1, 0)},
		"a one-off that bridges into a recurring window": {func(t *testing.T) []Window {
			return []Window{nightly(t), {Start: utc(2026, 12, 2, 1, 0), End: utc(2026, 12, 2, 2, 30)}}
		}, utc(2026, 12, 2, 1, 15), true, utc(2026, 12, 2, 2, 0)},
		"inside both: the earliest end": {func(t *testing.T) []Window {
			return []Window{nightly(t), {Start: utc(2026, 12, 2, 1, 0), End: utc(2026, 12, 2, 2, 30)}}
		}, utc(2026, 12, 2, 2, 15), true, utc(2026, 12, 2, 2, 30)},
		"a window that never starts": {func(t *testing.T) []Window { return []Window{recurring(t, "0 0 30 2 *", time.Hour, "")} },
			utc(2026, 12, 2, 0, 0), false, time.Time{}},
		"a duration across the clock set back lasts its elapsed time": {func(t *testing.T) []Window {
			return []Window{recurring(t, "30 1 * * *", 2*time.Hour, "Europe/Berlin")}
		}, utc(2026, 10, 24, 23, 45), true, utc(2026, 10, 25, 1, 30)},
	} {
		t.Run(name, func(t *testing.T) {
			active, next := Active(tc.windows(t), tc.now)
			assert.Equal(t, tc.wantActive, active)
			assert.Equal(t, tc.wantNext, next.UTC())
		})
	}
}

// TestActiveFollowsAWindowThatNeverEnds walks a schedule whose windows
// always overlap: every instant it says to ask again at, it is active.
func TestActiveFollowsAWindowThatNeverEnds(t *testing.T) {
	w := recurring(t, "*/10 * * * *", time.Hour, "")
	now := utc(2026, 12, 2, 0, 5)
	for range 20 {
		active, next := Active([]Window{w}, now)
		require.True(t, active, "at %s", now)
		require.True(t, next.After(now))
		now = next
	}
}

func TestLocation(t *testing.T) {
	for name, tc := range map[string]struct{ zone, wantErr string }{
		"empty is UTC": {"", ""},
		"IANA name":    {"America/Argentina/Buenos_Aires", ""},
		"UTC":          {"UTC", ""},
		"Local":        {"Local", "depends on the machine"},
		"unknown":      {"Mars/Olympus_Mons", `unknown time zone "Mars/Olympus_Mons"`},
		"a path":       {"../../etc/passwd", "unknown time zone"},
		"too long":     {"Europe/" + string(make([]byte, 70)), "at most 64"},
	} {
		t.Run(name, func(t *testing.T) {
			loc, err := Location(tc.zone)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, loc)
		})
	}
}
