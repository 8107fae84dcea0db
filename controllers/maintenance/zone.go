package maintenance

import (
	"fmt"
	"time"
	// The IANA time zone database, embedded: a window's time zone must not
	// depend on what the container image holds.
	_ "time/tzdata"
)

// MaxTimeZoneLength bounds a time zone name, as the CRD does.
const MaxTimeZoneLength = 64

// Location returns the time zone an IANA name (such as Europe/Berlin)
// stands for; the empty name is UTC. "Local", whose meaning depends on the
// machine, is refused.
func Location(name string) (*time.Location, error) {
	switch {
	case name == "":
		return time.UTC, nil
	case len(name) > MaxTimeZoneLength:
		return nil, fmt.Errorf("time zone name is %d characters long, at most %d", len(name), MaxTimeZoneLength)
	case name == "Local":
		return nil, fmt.Errorf("time zone %q depends on the machine; name one, such as Europe/Berlin or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Berlin or UTC", name)
	}
	return loc, nil
}
