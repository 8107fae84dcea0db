package maintenance

import (
	"time"
)

// horizonDays bounds how far ahead a schedule is searched for its next
// start: a schedule that matches no day within it (30 2 * * *, February
// 30th) never starts a window. Five years hold every date a valid
// expression can name but February 29th on a given weekday.
const horizonDays = 5 * 366

// Window is one maintenance window: recurring (Schedule, Duration and
// Location set) or one-off (Start and End set). The zero Window is never
// active.
type Window struct {
	// Schedule says when a recurring window starts, in Location's wall
	// clock (UTC when nil); each lasts Duration.
	Schedule *Schedule
	Duration time.Duration
	Location *time.Location
	// Start and End bound a one-off window: active from Start until, not
	// including, End.
	Start, End time.Time
}

// activeAt returns whether w is active at now and the next instant that
// may change: the end of the recurrence (or one-off window) that covers
// now, or the next start. A zero time means never.
func (w Window) activeAt(now time.Time) (active bool, change time.Time) {
	if w.Schedule == nil {
		switch {
		case w.End.IsZero() || !w.End.After(w.Start) || !now.Before(w.End):
			return false, time.Time{}
		case now.Before(w.Start):
			return false, w.Start
		default:
			return true, w.End
		}
	}
	if w.Duration <= 0 {
		return false, time.Time{}
	}
	// The earliest start after now-Duration: the recurrence it starts
	// covers now when it starts at or before now.
	start, ok := w.Schedule.next(now.Add(-w.Duration), w.location())
	switch {
	case !ok:
		return false, time.Time{}
	case start.After(now):
		return false, start
	default:
		return true, start.Add(w.Duration)
	}
}

func (w Window) location() *time.Location {
	if w.Location == nil {
		return time.UTC
	}
	return w.Location
}

// Active reports whether any of windows is active at now, and when to ask
// again: the earliest instant at which one of them starts or ends. The
// answer may be the same then (another window still covers it, or the
// next recurrence of the same schedule overlaps); a zero next means none
// of them ever changes.
func Active(windows []Window, now time.Time) (active bool, next time.Time) {
	for _, w := range windows {
		on, change := w.activeAt(now)
		active = active || on
		if !change.IsZero() && (next.IsZero() || change.Before(next)) {
			next = change
		}
	}
	return active, next
}

// next returns the first start of s strictly after after, in loc's wall
// clock; false when none lies within the horizon. A wall-clock time that
// occurs twice (the clock set back) starts a window once, at its first
// occurrence; one the clock skips (set forward) starts it at the instant
// the clock jumped past it.
func (s Schedule) next(after time.Time, loc *time.Location) (time.Time, bool) {
	local := after.In(loc)
	y, m, d := local.Date()
	for i := range horizonDays {
		// Walk the civil calendar at noon UTC: no time zone changes the
		// date under it.
		date := time.Date(y, m, d+i, 12, 0, 0, 0, time.UTC)
		if !s.matchesDay(int(date.Month()), date.Day(), int(date.Weekday())) {
			continue
		}
		for h := range 24 {
			if s.hours&(1<<h) == 0 {
				continue
			}
			for min := range 60 {
				if s.minutes&(1<<min) == 0 {
					continue
				}
				at := wallTime(date.Year(), date.Month(), date.Day(), h, min, loc)
				if at.After(after) {
					return at, true
				}
			}
		}
	}
	return time.Time{}, false
}

// wallTime is the instant loc's clock first reads y-m-d h:min, or, when
// the clock skips that time, the instant it jumped past it.
func wallTime(y int, m time.Month, d, h, min int, loc *time.Location) time.Time {
	at := time.Date(y, m, d, h, min, 0, 0, loc)
	if !sameWall(at, y, m, d, h, min) {
		// Skipped: time.Date used the offset from one side of the jump,
		// which lands on the other. Walk to the first minute after it.
		for !sameOrLaterWall(at, y, m, d, h, min) {
			at = at.Add(time.Minute)
		}
		for sameOrLaterWall(at.Add(-time.Minute), y, m, d, h, min) {
			at = at.Add(-time.Minute)
		}
		return at
	}
	// Repeated: time.Date may pick the second occurrence; the first lies
	// one offset change earlier.
	_, offset := at.Zone()
	_, before := at.Add(-24 * time.Hour).Zone()
	if before > offset {
		if first := at.Add(-time.Duration(before-offset) * time.Second); sameWall(first, y, m, d, h, min) {
			return first
		}
	}
	return at
}

func sameWall(t time.Time, y int, m time.Month, d, h, min int) bool {
	ty, tm, td := t.Date()
	return ty == y && tm == m && td == d && t.Hour() == h && t.Minute() == min
}

// sameOrLaterWall reports whether t's wall clock reads y-m-d h:min or
// later.
func sameOrLaterWall(t time.Time, y int, m time.Month, d, h, min int) bool {
	ty, tm, td := t.Date()
	a := [5]int{ty, int(tm), td, t.Hour(), t.Minute()}
	b := [5]int{y, int(m), d, h, min}
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}
