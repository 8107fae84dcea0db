package maintenance

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxScheduleLength bounds a schedule's text, as the CRD does.
const MaxScheduleLength = 128

// Schedule is a parsed cron expression: the minutes a recurring window
// starts at, in the wall-clock time of its time zone.
//
// The expression has the five fields of crontab(5): minute (0-59), hour
// (0-23), day of month (1-31), month (1-12 or JAN-DEC) and day of week
// (0-7, 0 and 7 both Sunday, or SUN-SAT). Each field is *, a value, a range
// a-b, a step */n, a-b/n or a/n (from a to the field's end), or a
// comma-separated list of those. As in cron, a minute matches when the day
// of month or the day of week matches if both are restricted (neither is
// *), and when both match otherwise. The macros @yearly (@annually),
// @monthly, @weekly, @daily (@midnight) and @hourly stand for their usual
// expressions.
type Schedule struct {
	minutes uint64 // bit i: minute i
	hours   uint32 // bit i: hour i
	days    uint32 // bit i: day of month i (1-31)
	months  uint16 // bit i: month i (1-12)
	weekday uint8  // bit i: weekday i (0 Sunday - 6)
	// anyDay and anyWeekday are true when the field was *: the other one
	// alone restricts the days.
	anyDay, anyWeekday bool
}

var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// field describes one of the five fields.
type field struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i, upper case
}

var fields = [5]field{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{name: "day of week", min: 0, max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// ParseSchedule parses a cron expression (see Schedule). The error names
// the field and the part that is wrong.
func ParseSchedule(expr string) (Schedule, error) {
	if len(expr) > MaxScheduleLength {
		return Schedule{}, fmt.Errorf("schedule is %d characters long, at most %d", len(expr), MaxScheduleLength)
	}
	text := strings.TrimSpace(expr)
	if m, ok := macros[strings.ToLower(text)]; ok {
		text = m
	} else if strings.HasPrefix(text, "@") {
		return Schedule{}, fmt.Errorf("unknown macro %q: use @yearly, @monthly, @weekly, @daily or @hourly", text)
	}
	parts := strings.Fields(text)
	if len(parts) != len(fields) {
		return Schedule{}, fmt.Errorf("schedule %q has %d fields, want 5 (minute hour day-of-month month day-of-week)", expr, len(parts))
	}
	var set [5]uint64
	for i, p := range parts {
		s, err := fields[i].parse(p)
		if err != nil {
			return Schedule{}, fmt.Errorf("%s field %q: %w", fields[i].name, p, err)
		}
		set[i] = s
	}
	weekday := set[4]
	if weekday&(1<<7) != 0 {
		weekday = weekday&^(1<<7) | 1 // 7 is Sunday too
	}
	return Schedule{
		minutes: set[0], hours: uint32(set[1]), days: uint32(set[2]), months: uint16(set[3]), weekday: uint8(weekday),
		anyDay: parts[2] == "*", anyWeekday: parts[4] == "*",
	}, nil
}

// parse returns the values one field's text stands for, as a bit set.
func (f field) parse(text string) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(text, ",") {
		s, err := f.parseItem(item)
		if err != nil {
			return 0, err
		}
		set |= s
	}
	return set, nil
}

// parseItem parses one element of a list: *, a value, a range, with an
// optional step.
func (f field) parseItem(item string) (uint64, error) {
	rng, stepText, stepped := strings.Cut(item, "/")
	step := 1
	if stepped {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > f.max {
			return 0, fmt.Errorf("step %q is not a number from 1 to %d", stepText, f.max)
		}
		step = n
	}
	lo, hi := f.min, f.max
	switch {
	case rng == "*":
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(a); err != nil {
			return 0, err
		}
		if hi, err = f.value(b); err != nil {
			return 0, err
		}
		if lo > hi {
			return 0, fmt.Errorf("range %q runs backwards", rng)
		}
	default:
		v, err := f.value(rng)
		if err != nil {
			return 0, err
		}
		lo = v
		if !stepped {
			hi = v
		}
	}
	var set uint64
	for v := lo; v <= hi; v += step {
		set |= 1 << v
	}
	return set, nil
}

// value parses a number or a name of the field.
func (f field) value(text string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(text, n) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(text)
	if err != nil || v < f.min || v > f.max {
		if len(f.names) > 0 {
			return 0, fmt.Errorf("%q is neither a number from %d to %d nor a name such as %s", text, f.min, f.max, f.names[0])
		}
		return 0, fmt.Errorf("%q is not a number from %d to %d", text, f.min, f.max)
	}
	return v, nil
}

// matchesDay reports whether the schedule starts windows on a date.
func (s Schedule) matchesDay(month, day, weekday int) bool {
	if s.months&(1<<month) == 0 {
		return false
	}
	dayOK, weekdayOK := s.days&(1<<day) != 0, s.weekday&(1<<weekday) != 0
	if !s.anyDay && !s.anyWeekday {
		return dayOK || weekdayOK
	}
	return dayOK && weekdayOK
}
