package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/maintenance"
	"github.com/networkio/webchecker/probing"
)

// +kubebuilder:rbac:groups=test.network.io,resources=webcheckermaintenances,verbs=get;list;watch

// maintenanceSource is one maintenance window of a checker, where it comes
// from, and why it cannot be evaluated (err).
type maintenanceSource struct {
	// from names the window: spec.maintenanceWindows[i], or
	// WebCheckerMaintenance <name> windows[i] (with its description).
	from   string
	window maintenance.Window
	err    error
}

// maintenanceState is what a checker's windows say at one instant.
type maintenanceState struct {
	// condition is the Maintenance condition; nil when no window applies
	// (the condition is removed).
	condition *metav1.Condition
	// next is when to look again; zero when nothing ever changes.
	next time.Time
}

// maintenanceSources returns the windows that apply to wc: those of its
// spec, then those of the WebCheckerMaintenance objects of its namespace
// that select it, by name, at most MaxMaintenanceSelected of them (ignored
// counts those left out). An error is a failed read of the cache.
func (r *WebCheckerReconciler) maintenanceSources(ctx context.Context, wc *webcheckerv1alpha1.WebChecker) (sources []maintenanceSource, ignored int, err error) {
	for i, w := range wc.Spec.MaintenanceWindows {
		sources = append(sources, sourceOf(fmt.Sprintf("spec.maintenanceWindows[%d]", i), w))
	}
	var list webcheckerv1alpha1.WebCheckerMaintenanceList
	// Read only: the cache's own copies, not deep copies of every object
	// of the namespace on every reconcile.
	if err := r.Client.List(ctx, &list, client.InNamespace(wc.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, fmt.Errorf("listing WebCheckerMaintenances: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b webcheckerv1alpha1.WebCheckerMaintenance) int { return strings.Compare(a.Name, b.Name) })
	selected := 0
	for i := range list.Items {
		m := &list.Items[i]
		selector, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil {
			sources = append(sources, maintenanceSource{from: "WebCheckerMaintenance " + m.Name, err: fmt.Errorf("invalid selector: %w", err)})
			continue
		}
		if !selector.Matches(labels.Set(wc.Labels)) {
			continue
		}
		if selected++; selected > webcheckerv1alpha1.MaxMaintenanceSelected {
			ignored++
			continue
		}
		for j, w := range m.Spec.Windows {
			from := fmt.Sprintf("WebCheckerMaintenance %s windows[%d]", m.Name, j)
			if m.Spec.Description != "" {
				from += fmt.Sprintf(" (%s)", m.Spec.Description)
			}
			sources = append(sources, sourceOf(from, w))
		}
	}
	return sources, ignored, nil
}

// sourceOf turns one window of the API into a maintenance.Window.
func sourceOf(from string, w webcheckerv1alpha1.MaintenanceWindow) maintenanceSource {
	s := maintenanceSource{from: from}
	if w.Schedule == "" {
		if w.Start != nil && w.End != nil {
			s.window = maintenance.Window{Start: w.Start.Time, End: w.End.Time}
		}
		return s
	}
	schedule, err := maintenance.ParseSchedule(w.Schedule)
	if err != nil {
		s.err = err
		return s
	}
	loc, err := maintenance.Location(w.TimeZone)
	if err != nil {
		s.err = err
		return s
	}
	s.window = maintenance.Window{Schedule: &schedule, Location: loc}
	if w.Duration != nil {
		s.window.Duration = w.Duration.Duration
	}
	return s
}

// maintenanceAt is the Maintenance condition that sources give at now
// (stamped now, at generation), and when to look again:
//
//   - a window is open: True, InWindow, naming the first open one and
//     when it closes;
//   - none is, and one cannot be evaluated: False, InvalidWindow, naming
//     those that cannot;
//   - none is: False, NoWindow, saying when the next one opens.
//
// No sources (and none ignored): no condition.
func maintenanceAt(sources []maintenanceSource, ignored int, generation int64, now time.Time) maintenanceState {
	if len(sources) == 0 && ignored == 0 {
		return maintenanceState{}
	}
	var (
		open, invalid []string
		next          time.Time
		nextFrom      string
	)
	for _, s := range sources {
		if s.err != nil {
			invalid = append(invalid, fmt.Sprintf("%s: %v", s.from, s.err))
			continue
		}
		active, change := maintenance.Active([]maintenance.Window{s.window}, now)
		if active {
			open = append(open, fmt.Sprintf("%s until %s", s.from, change.UTC().Format(time.RFC3339)))
		}
		if !change.IsZero() && (next.IsZero() || change.Before(next)) {
			next, nextFrom = change, s.from
		}
	}
	c := metav1.Condition{
		Type:               webcheckerv1alpha1.ConditionMaintenance,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	}
	var parts []string
	switch {
	case len(open) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, webcheckerv1alpha1.ReasonInWindow
		parts = append(parts, "In maintenance: "+strings.Join(open, "; "))
	case len(invalid) > 0:
		c.Reason = webcheckerv1alpha1.ReasonInvalidWindow
	default:
		c.Reason = webcheckerv1alpha1.ReasonNoWindow
	}
	if len(open) == 0 {
		if next.IsZero() {
			parts = append(parts, "No maintenance window opens again")
		} else {
			parts = append(parts, fmt.Sprintf("Next maintenance window opens at %s (%s)", next.UTC().Format(time.RFC3339), nextFrom))
		}
	}
	if len(invalid) > 0 {
		parts = append(parts, "cannot evaluate "+strings.Join(invalid, "; "))
	}
	if ignored > 0 {
		parts = append(parts, fmt.Sprintf("%d more WebCheckerMaintenance objects select this checker and are ignored (at most %d count, by name)", ignored, webcheckerv1alpha1.MaxMaintenanceSelected))
	}
	c.Message = probing.Truncate(strings.Join(parts, "; "), maxConditionMessage)
	return maintenanceState{condition: &c, next: next}
}

// maintenanceOf is the maintenance state of wc at now.
func (r *WebCheckerReconciler) maintenanceOf(ctx context.Context, wc *webcheckerv1alpha1.WebChecker, now time.Time) (maintenanceState, error) {
	sources, ignored, err := r.maintenanceSources(ctx, wc)
	if err != nil {
		return maintenanceState{}, err
	}
	return maintenanceAt(sources, ignored, wc.Generation, now), nil
}

// maintenanceRequeue is how long after now the reconcile of a checker in
// state m must run again for its Maintenance condition to follow the
// windows; zero when they never change. The change is an instant the
// windows start or end at: a few milliseconds later, the answer is the
// new one.
func maintenanceRequeue(m maintenanceState, now time.Time) time.Duration {
	if m.next.IsZero() {
		return 0
	}
	return max(m.next.Sub(now), 0) + maintenanceSlack
}

// maintenanceSlack is how long after a window starts or ends its checker
// is looked at again.
const maintenanceSlack = 10 * time.Millisecond

// checkersSelectedBy maps a WebCheckerMaintenance to every checker of its
// namespace: those it selects now, and those it selected before a change
// of its selector, whose windows it no longer gives.
func checkersSelectedBy(reader client.Reader) func(context.Context, *webcheckerv1alpha1.WebCheckerMaintenance) []reconcile.Request {
	return func(ctx context.Context, m *webcheckerv1alpha1.WebCheckerMaintenance) []reconcile.Request {
		return checkerRequests(ctx, reader, client.InNamespace(m.Namespace))
	}
}
