package maintenance

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseScheduleRejectsWhatCronDoesNot(t *testing.T) {
	for name, tc := range map[string]struct {
		expr, wantErr string
	}{
		"four fields":         {"0 2 * *", "has 4 fields, want 5"},
		"six fields":          {"0 0 2 * * *", "has 6 fields, want 5"},
		"minute out of range": {"60 2 * * *", `minute field "60": "60" is not a number from 0 to 59`},
		"hour out of range":   {"0 24 * * *", `hour field "24"`},
		"day zero":            {"0 0 0 * *", `day of month field "0"`},
		"month name":          {"0 0 1 JANUARY *", `month field "JANUARY": "JANUARY" is neither a number from 1 to 12 nor a name such as JAN`},
		"weekday 8":           {"0 0 * * 8", `day of week field "8"`},
		"backwards range":     {"0 22-2 * * *", `range "22-2" runs backwards`},
		"zero step":           {"*/0 * * * *", `step "0" is not a number from 1 to 59`},
		"step not a number":   {"*/x * * * *", `step "x"`},
		"empty list item":     {"1,,2 * * * *", `minute field "1,,2"`},
		"unknown macro":       {"@reboot", `unknown macro "@reboot"`},
		"too long":            {strings.Repeat("1,", 70) + "1 * * * *", "at most 128"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSchedule(tc.expr)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// TestScheduleNext checks the next start after an instant, in UTC.
func TestScheduleNext(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	for name, tc := range map[string]struct {
		expr, after, want string
	}{
		"every minute":                {"* * * * *", "2026-12-02T06:30:10Z", "2026-12-02T06:31:00Z"},
		"strictly after":              {"30 6 * * *", "2026-12-02T06:30:00Z", "2026-12-03T06:30:00Z"},
		"later today":                 {"30 6 * * *", "2026-12-02T05:00:00Z", "2026-12-02T06:30:00Z"},
		"step":                        {"*/20 * * * *", "2026-12-02T06:41:00Z", "2026-12-02T07:00:00Z"},
		"range with step":             {"10-50/20 * * * *", "2026-12-02T06:31:00Z", "2026-12-02T06:50:00Z"},
		"value with step":             {"45/10 * * * *", "2026-12-02T06:46:00Z", "2026-12-02T06:55:00Z"},
		"list":                        {"0 1,13 * * *", "2026-12-02T02:00:00Z", "2026-12-02T13:00:00Z"},
		"weekday name (Sat)":          {"0 3 * * SAT", "2026-12-02T00:00:00Z", "2026-12-05T03:00:00Z"},
		"Sunday as 7":                 {"0 3 * * 7", "2026-12-02T00:00:00Z", "2026-12-06T03:00:00Z"},
		"weekday range":               {"0 3 * * MON-FRI", "2026-12-04T04:00:00Z", "2026-12-07T03:00:00Z"},
		"month name":                  {"0 0 1 MAR *", "2026-12-02T00:00:00Z", "2027-03-01T00:00:00Z"},
		"day or weekday when both":    {"0 0 15 * MON", "2026-12-02T00:00:00Z", "2026-12-07T00:00:00Z"},
		"day and weekday with star":   {"0 0 15 * *", "2026-12-02T00:00:00Z", "2026-12-15T00:00:00Z"},
		"leap day":                    {"0 0 29 2 *", "2026-12-02T00:00:00Z", "2028-02-29T00:00:00Z"},
		"macro":                       {"@monthly", "2026-12-02T00:00:00Z", "2027-01-01T00:00:00Z"},
		"macro upper case":            {"@HOURLY", "2026-12-02T06:59:59Z", "2026-12-02T07:00:00Z"},
		"31st skips short months":     {"0 0 31 * *", "2027-01-31T00:00:00Z", "2027-03-31T00:00:00Z"},
		"surrounding space is fine":   {"  0 0 * * *  ", "2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z"},
		"leap day or a Sunday in Feb": {"0 0 29 2 SUN", "2026-12-02T00:00:00Z", "2027-02-07T00:00:00Z"},
		"last minute of the year":     {"59 23 31 12 *", "2026-12-02T00:00:00Z", "2026-12-31T23:59:00Z"},
		"first minute of next year":   {"0 0 1 1 *", "2026-12-31T23:59:00Z", "2027-01-01T00:00:00Z"},
		"hour and minute in a range":  {"0-5 22-23 * * *", "2026-12-02T22:05:00Z", "2026-12-02T23:00:00Z"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := ParseSchedule(tc.expr)
			require.NoError(t, err)
			got, ok := s.next(at(tc.after), time.UTC)
			require.True(t, ok)
			assert.Equal(t, at(tc.want), got.UTC())
		})
	}
}

func TestScheduleThatNeverMatches(t *testing.T) {
	s, err := ParseSchedule("0 0 30 2 *")
	require.NoError(t, err)
	_, ok := s.next(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.UTC)
	assert.False(t, ok, "February 30th never comes")
}

// TestScheduleNextAcrossClockChanges checks the starts on the nights the
// clock is set forward (a skipped wall time starts at the jump) and back
// (a repeated wall time starts once, at its first occurrence).
func TestScheduleNextAcrossClockChanges(t *testing.T) {
	for name, tc := range map[string]struct {
		zone, expr string
		after      time.Time // UTC
		want       time.Time // UTC
	}{
		// Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC).
		"Berlin, skipped 02:30 starts at the jump": {"Europe/Berlin", "30 2 * * *",
			time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)},
		"Berlin, 03:30 after the jump": {"Europe/Berlin", "30 3 * * *",
			time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)},
		"Berlin, the day after the jump": {"Europe/Berlin", "30 2 * * *",
			time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)},
		// Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC).
		"Berlin, repeated 02:30 at its first occurrence": {"Europe/Berlin", "30 2 * * *",
			time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)},
		"Berlin, repeated 02:30 starts once": {"Europe/Berlin", "30 2 * * *",
			time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC)},
		"Berlin, after the change": {"Europe/Berlin", "0 5 * * *",
			time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 4, 0, 0, 0, time.UTC)},
		// New York, 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00 UTC).
		"New York, skipped 02:15": {"America/New_York", "15 2 * * *",
			time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)},
		// Lord Howe, 2026-10-04: 02:00 +1030 becomes 02:30 +11 (15:30 UTC the day before).
		"Lord Howe, half-hour jump": {"Australia/Lord_Howe", "15 2 * * *",
			time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 3, 15, 30, 0, 0, time.UTC)},
		"Kolkata, no changes, half-hour offset": {"Asia/Kolkata", "0 9 * * *",
			time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC)},
	} {
		t.Run(name, func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			require.NoError(t, err)
			s, err := ParseSchedule(tc.expr)
			require.NoError(t, err)
			got, ok := s.next(tc.after, loc)
			require.True(t, ok)
			assert.Equal(t, tc.want, got.UTC())
		})
	}
}
