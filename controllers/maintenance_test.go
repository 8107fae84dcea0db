package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/probetest"
)

// maintenanceOf returns the checker's Maintenance condition as stored, nil
// when it has none.
func maintenanceOf(t *testing.T, key types.NamespacedName) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(getChecker(t, key).Status.Conditions, webcheckerv1alpha1.ConditionMaintenance)
}

// TestMaintenanceObjectOpensAndClosesItsWindow creates checkers, some
// labelled for a WebCheckerMaintenance whose one-off window opens a few
// seconds later: the selected ones turn Maintenance True within 2 s of its
// start and False within 2 s of its end, with webchecker_maintenance
// following; the others never get the condition; probes and Ready go on.
func TestMaintenanceObjectOpensAndClosesItsWindow(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	var selected, others []types.NamespacedName
	for i, name := range []string{"db-0", "db-1", "db-2", "web-0", "web-1"} {
		wc := newChecker(ns, name, target.URL(), "/")
		if i < 3 {
			wc.Labels = map[string]string{"tier": "db"}
		}
		require.NoError(t, k8sClient.Create(context.Background(), wc))
		key := client.ObjectKeyFromObject(wc)
		if i < 3 {
			selected = append(selected, key)
		} else {
			others = append(others, key)
		}
		waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	}

	// Whole seconds: metav1.Time is serialised to the second.
	start := time.Now().Add(4 * time.Second).Truncate(time.Second)
	end := start.Add(4 * time.Second)
	m := &webcheckerv1alpha1.WebCheckerMaintenance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-upgrade"},
		Spec: webcheckerv1alpha1.WebCheckerMaintenanceSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}},
			Description: "database upgrade",
			Windows:     []webcheckerv1alpha1.MaintenanceWindow{{Start: &metav1.Time{Time: start}, End: &metav1.Time{Time: end}}},
		},
	}
	require.NoError(t, k8sClient.Create(context.Background(), m))

	for _, key := range selected {
		c := waitCondition(t, key, webcheckerv1alpha1.ConditionMaintenance, metav1.ConditionFalse, webcheckerv1alpha1.ReasonNoWindow, waitFor)
		assert.Equal(t, "Next maintenance window opens at "+start.UTC().Format(time.RFC3339)+
			" (WebCheckerMaintenance db-upgrade windows[0] (database upgrade))", condition(c, webcheckerv1alpha1.ConditionMaintenance).Message)
	}
	opened := waitAll(t, selected, metav1.ConditionTrue, webcheckerv1alpha1.ReasonInWindow, time.Until(start)+waitFor)
	assert.WithinDuration(t, start, opened, 2*time.Second, "maintenance started late (or early)")
	for _, key := range selected {
		c := maintenanceOf(t, key)
		assert.Equal(t, "In maintenance: WebCheckerMaintenance db-upgrade windows[0] (database upgrade) until "+end.UTC().Format(time.RFC3339), c.Message)
		assert.Equal(t, map[string]float64{"": 1}, checkerSeries(t, "webchecker_maintenance", key))
		assert.Equal(t, metav1.ConditionTrue, ready(getChecker(t, key)).Status, "Ready still follows the probes")
	}
	hits := target.Count("/")
	require.Eventually(t, func() bool { return target.Count("/") > hits }, waitFor, poll, "no probe in the window: probes go on")

	closed := waitAll(t, selected, metav1.ConditionFalse, webcheckerv1alpha1.ReasonNoWindow, time.Until(end)+waitFor)
	assert.WithinDuration(t, end, closed, 2*time.Second, "maintenance ended late (or early)")
	for _, key := range selected {
		assert.Equal(t, "No maintenance window opens again", maintenanceOf(t, key).Message)
		assert.Equal(t, map[string]float64{"": 0}, checkerSeries(t, "webchecker_maintenance", key))
	}
	for _, key := range others {
		assert.Nil(t, maintenanceOf(t, key), "a checker the maintenance does not select has no Maintenance condition")
		assert.Empty(t, checkerSeries(t, "webchecker_maintenance", key))
	}

	// Deleted, the maintenance leaves the checkers: the condition goes.
	require.NoError(t, k8sClient.Delete(context.Background(), m))
	for _, key := range selected {
		require.Eventually(t, func() bool { return maintenanceOf(t, key) == nil }, waitFor, poll, "%s keeps its Maintenance condition", key)
	}
}

// waitAll waits until every checker's Maintenance condition has status and
// reason, and returns when the last one was seen so.
func waitAll(t *testing.T, keys []types.NamespacedName, status metav1.ConditionStatus, reason string, within time.Duration) time.Time {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, key := range keys {
			c := maintenanceOf(t, key)
			if c == nil || c.Status != status || c.Reason != reason {
				return false
			}
		}
		return true
	}, within, 20*time.Millisecond, "Maintenance never became %s/%s on all of %v", status, reason, keys)
	return time.Now()
}

// TestMaintenanceWindowInTheSpec gives a checker a recurring window that
// is open now (every minute, for an hour) and one with an unknown time
// zone: Maintenance is True and names the open one, and says which one
// cannot be evaluated.
func TestMaintenanceWindowInTheSpec(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	wc := newChecker(ns, "always-in-maintenance", target.URL(), "/")
	wc.Spec.MaintenanceWindows = []webcheckerv1alpha1.MaintenanceWindow{
		{Schedule: "* * * * *", Duration: &metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin"},
		{Schedule: "0 2 * * *", Duration: &metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus_Mons"},
	}
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	got := waitCondition(t, client.ObjectKeyFromObject(wc), webcheckerv1alpha1.ConditionMaintenance, metav1.ConditionTrue, webcheckerv1alpha1.ReasonInWindow, waitFor)
	msg := condition(got, webcheckerv1alpha1.ConditionMaintenance).Message
	assert.True(t, strings.HasPrefix(msg, "In maintenance: spec.maintenanceWindows[0] until "), msg)
	assert.Contains(t, msg, `cannot evaluate spec.maintenanceWindows[1]: unknown time zone "Mars/Olympus_Mons"`)
}

// TestMaintenanceWindowAdmission checks the windows at admission, in a
// checker's spec and in a WebCheckerMaintenance.
func TestMaintenanceWindowAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	for name, tc := range map[string]struct {
		window  map[string]any
		wantErr string
	}{
		"recurring":                 {window: map[string]any{"schedule": "0 2 * * SAT", "duration": "2h", "timeZone": "Europe/Berlin"}},
		"macro":                     {window: map[string]any{"schedule": "@daily", "duration": "30m"}},
		"one-off":                   {window: map[string]any{"start": "2026-12-24T18:00:00+01:00", "end": "2026-12-27T08:00:00+01:00"}},
		"schedule without duration": {window: map[string]any{"schedule": "0 2 * * *"}, wantErr: "schedule and duration go together"},
		"duration without schedule": {window: map[string]any{"duration": "1h", "start": "2026-12-24T18:00:00Z", "end": "2026-12-25T18:00:00Z"}, wantErr: "schedule and duration go together"},
		"start without end":         {window: map[string]any{"start": "2026-12-24T18:00:00Z"}, wantErr: "start and end go together"},
		"both kinds":                {window: map[string]any{"schedule": "0 2 * * *", "duration": "1h", "start": "2026-12-24T18:00:00Z", "end": "2026-12-25T18:00:00Z"}, wantErr: "either recurring"},
		"neither kind":              {window: map[string]any{}, wantErr: "either recurring"},
		"end before start":          {window: map[string]any{"start": "2026-12-25T18:00:00Z", "end": "2026-12-24T18:00:00Z"}, wantErr: "end must be after start"},
		"one-off too long":          {window: map[string]any{"start": "2026-01-01T00:00:00Z", "end": "2026-06-01T00:00:00Z"}, wantErr: "at most 93 days"},
		"time zone of a one-off":    {window: map[string]any{"start": "2026-12-24T18:00:00Z", "end": "2026-12-25T18:00:00Z", "timeZone": "UTC"}, wantErr: "timeZone is for a recurring window"},
		"duration too short":        {window: map[string]any{"schedule": "0 2 * * *", "duration": "30s"}, wantErr: "duration must be at least 1m"},
		"duration too long":         {window: map[string]any{"schedule": "0 2 * * *", "duration": "745h"}, wantErr: "duration must be at most 744h"},
		"four fields":               {window: map[string]any{"schedule": "0 2 * *", "duration": "1h"}, wantErr: "spec.maintenanceWindows[0].schedule"},
		"time zone with a space":    {window: map[string]any{"schedule": "0 2 * * *", "duration": "1h", "timeZone": "Europe/Ber lin"}, wantErr: "timeZone"},
		"time zone too long":        {window: map[string]any{"schedule": "0 2 * * *", "duration": "1h", "timeZone": strings.Repeat("A", 65)}, wantErr: "timeZone"},
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": webcheckerv1alpha1.GroupVersion.String(),
				"kind":       "WebChecker",
				"metadata":   map[string]any{"namespace": ns, "name": "window"},
				"spec":       map[string]any{"host": "example.com", "maintenanceWindows": []any{tc.window}},
			}}
			m := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": webcheckerv1alpha1.GroupVersion.String(),
				"kind":       "WebCheckerMaintenance",
				"metadata":   map[string]any{"namespace": ns, "name": "window"},
				"spec":       map[string]any{"selector": map[string]any{}, "windows": []any{tc.window}},
			}}
			for _, obj := range []*unstructured.Unstructured{u, m} {
				err := k8sClient.Create(context.Background(), obj, client.DryRunAll)
				if tc.wantErr == "" {
					assert.NoError(t, err, obj.GetKind())
					continue
				}
				if assert.Error(t, err, obj.GetKind()) {
					assert.Contains(t, err.Error(), strings.ReplaceAll(tc.wantErr, "spec.maintenanceWindows[0]", map[string]string{"WebChecker": "spec.maintenanceWindows[0]", "WebCheckerMaintenance": "spec.windows[0]"}[obj.GetKind()]))
				}
			}
		})
	}

	t.Run("a maintenance needs a selector and a window", func(t *testing.T) {
		m := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": webcheckerv1alpha1.GroupVersion.String(),
			"kind":       "WebCheckerMaintenance",
			"metadata":   map[string]any{"namespace": ns, "name": "empty"},
			"spec":       map[string]any{"windows": []any{}},
		}}
		err := k8sClient.Create(context.Background(), m, client.DryRunAll)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.selector: Required value")
		assert.Contains(t, err.Error(), "spec.windows: Invalid value")
	})
}
