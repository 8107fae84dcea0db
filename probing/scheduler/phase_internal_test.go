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
