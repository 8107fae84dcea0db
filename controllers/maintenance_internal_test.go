package controllers

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/maintenance"
)

func TestMaintenanceAt(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	oneOff := func(from string, start, end time.Duration) maintenanceSource {
		return maintenanceSource{from: from, window: maintenance.Window{Start: now.Add(start), End: now.Add(end)}}
	}
	for name, tc := range map[string]struct {
		sources     []maintenanceSource
		ignored     int
		wantNil     bool
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantNext    time.Time
	}{
		"no windows": {wantNil: true},
		"open": {sources: []maintenanceSource{oneOff("spec.maintenanceWindows[0]", -time.Hour, time.Hour)},
			wantStatus: metav1.ConditionTrue, wantReason: webcheckerv1alpha1.ReasonInWindow,
			wantMessage: "In maintenance: spec.maintenanceWindows[0] until 2026-12-02T11:00:00Z", wantNext: now.Add(time.Hour)},
		"to come": {sources: []maintenanceSource{oneOff("spec.maintenanceWindows[0]", time.Hour, 2*time.Hour)},
			wantStatus: metav1.ConditionFalse, wantReason: webcheckerv1alpha1.ReasonNoWindow,
			wantMessage: "Next maintenance window opens at 2026-12-02T11:00:00Z (spec.maintenanceWindows[0])", wantNext: now.Add(time.Hour)},
		"over": {sources: []maintenanceSource{oneOff("spec.maintenanceWindows[0]", -2*time.Hour, -time.Hour)},
			wantStatus: metav1.ConditionFalse, wantReason: webcheckerv1alpha1.ReasonNoWindow,
			wantMessage: "No maintenance window opens again"},
		"two open: both named, the earliest end next": {sources: []maintenanceSource{
			oneOff("a", -time.Hour, 2*time.Hour), oneOff("b", -time.Minute, time.Hour)},
			wantStatus: metav1.ConditionTrue, wantReason: webcheckerv1alpha1.ReasonInWindow,
			wantMessage: "In maintenance: a until 2026-12-02T12:00:00Z; b until 2026-12-02T11:00:00Z", wantNext: now.Add(time.Hour)},
		"invalid and none open": {sources: []maintenanceSource{
			{from: "spec.maintenanceWindows[0]", err: errors.New(`unknown time zone "X"`)}, oneOff("b", time.Hour, 2*time.Hour)},
			wantStatus: metav1.ConditionFalse, wantReason: webcheckerv1alpha1.ReasonInvalidWindow,
			wantMessage: `Next maintenance window opens at 2026-12-02T11:00:00Z (b); cannot evaluate spec.maintenanceWindows[0]: unknown time zone "X"`, wantNext: now.Add(time.Hour)},
		"invalid and one open": {sources: []maintenanceSource{
			{from: "a", err: errors.New("bad")}, oneOff("b", -time.Hour, time.Hour)},
			wantStatus: metav1.ConditionTrue, wantReason: webcheckerv1alpha1.ReasonInWindow,
			wantMessage: "In maintenance: b until 2026-12-02T11:00:00Z; cannot evaluate a: bad", wantNext: now.Add(time.Hour)},
		"ignored maintenances are said": {ignored: 3,
			wantStatus: metav1.ConditionFalse, wantReason: webcheckerv1alpha1.ReasonNoWindow,
			wantMessage: "No maintenance window opens again; 3 more WebCheckerMaintenance objects select this checker and are ignored (at most 32 count, by name)"},
	} {
		t.Run(name, func(t *testing.T) {
			m := maintenanceAt(tc.sources, tc.ignored, 7, now)
			if tc.wantNil {
				assert.Nil(t, m.condition)
				assert.Zero(t, maintenanceRequeue(m, now))
				return
			}
			require.NotNil(t, m.condition)
			assert.Equal(t, webcheckerv1alpha1.ConditionMaintenance, m.condition.Type)
			assert.Equal(t, tc.wantStatus, m.condition.Status)
			assert.Equal(t, tc.wantReason, m.condition.Reason)
			assert.Equal(t, tc.wantMessage, m.condition.Message)
			assert.Equal(t, int64(7), m.condition.ObservedGeneration)
			assert.Equal(t, tc.wantNext, m.next)
			if tc.wantNext.IsZero() {
				assert.Zero(t, maintenanceRequeue(m, now))
			} else {
				assert.Equal(t, tc.wantNext.Sub(now)+maintenanceSlack, maintenanceRequeue(m, now))
			}
		})
	}
}

// TestMaintenanceMessageIsStableWithinAWindow checks that the condition
// does not change between the instants a window opens and closes: one
// write at each end, none in between.
func TestMaintenanceMessageIsStableWithinAWindow(t *testing.T) {
	s, err := maintenance.ParseSchedule("0 2 * * *")
	require.NoError(t, err)
	src := []maintenanceSource{{from: "spec.maintenanceWindows[0]", window: maintenance.Window{Schedule: &s, Duration: 2 * time.Hour, Location: time.UTC}}}
	open := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	first := maintenanceAt(src, 0, 1, open)
	for at := open; at.Before(open.Add(2 * time.Hour)); at = at.Add(7 * time.Minute) {
		c := maintenanceAt(src, 0, 1, at)
		assert.Equal(t, first.condition.Message, c.condition.Message, "at %s", at)
		assert.Equal(t, first.condition.Status, c.condition.Status)
	}
	closed := maintenanceAt(src, 0, 1, open.Add(2*time.Hour))
	assert.Equal(t, metav1.ConditionFalse, closed.condition.Status)
	assert.Equal(t, "Next maintenance window opens at 2026-12-03T02:00:00Z (spec.maintenanceWindows[0])", closed.condition.Message)
}
