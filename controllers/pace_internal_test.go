package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestPaceEvents(t *testing.T) {
	var (
		onTime  = pace{}
		overran = pace{overran: true}
		behind  = pace{behind: true}
		both    = pace{overran: true, behind: true}
	)
	tests := map[string]struct {
		before, after pace
		want          []string // reasons, in order
	}{
		"keeps its turns":       {onTime, onTime, nil},
		"starts to overrun":     {onTime, overran, []string{EventReasonProbeOverran}},
		"falls behind":          {onTime, behind, []string{EventReasonProbesBehind}},
		"both at once":          {onTime, both, []string{EventReasonProbeOverran, EventReasonProbesBehind}},
		"still overrunning":     {overran, overran, nil},
		"overran, then behind":  {overran, behind, []string{EventReasonProbesBehind}},
		"one of two marks goes": {both, behind, nil},
		"back on schedule":      {behind, onTime, []string{EventReasonProbesOnSchedule}},
		"back from both":        {both, onTime, []string{EventReasonProbesOnSchedule}},
		"behind, then overran":  {behind, both, []string{EventReasonProbeOverran}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var reasons []string
			for _, e := range paceEvents(tc.before, tc.after, "10s", "replica-a") {
				reasons = append(reasons, e.reason)
				want := corev1.EventTypeWarning
				if e.reason == EventReasonProbesOnSchedule {
					want = corev1.EventTypeNormal
				}
				assert.Equal(t, want, e.eventType, e.reason)
			}
			assert.Equal(t, tc.want, reasons)
		})
	}
}

func TestPaceEventNotes(t *testing.T) {
	events := paceEvents(pace{}, pace{overran: true, behind: true}, "10s", "replica-a")
	assert.Len(t, events, 2)
	assert.Contains(t, events[0].note, "interval of 10s")
	assert.Contains(t, events[1].note, "Replica replica-a cannot keep up")
}
