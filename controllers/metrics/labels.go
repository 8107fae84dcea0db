package metrics

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// LabelPrefix prefixes the Prometheus label a WebChecker label is copied
// to, as kube-state-metrics does: team becomes label_team.
const LabelPrefix = "label_"

// CheckerLabels holds, for every scheduled checker, what its per-checker
// series take from its WebChecker labels, so that they need no read from
// the API server at scrape time: the values of the labels named in an
// allowlist (--metric-labels-allowlist), and the availability objective
// of webcheckerv1alpha1.SLOObjectiveLabel. The reconciler sets a checker's
// labels when it schedules it and deletes them when it removes it.
//
// Every per-checker series carries one label per allowlisted name, empty
// for a checker without it, so that all series of a metric have the same
// label names. A nil *CheckerLabels adds no label and keeps nothing; one
// with an empty allowlist keeps only the objectives. Its methods are safe
// for concurrent use.
type CheckerLabels struct {
	// names are the allowlisted WebChecker label names, sorted, and
	// promNames their Prometheus label names, in the same order.
	names, promNames []string

	mu         sync.RWMutex
	values     map[types.NamespacedName][]string
	objectives map[types.NamespacedName]float64
}

// NewCheckerLabels returns CheckerLabels for the WebChecker label names in
// allowlist (duplicates and empty names are ignored). Two names that
// sanitize to the same Prometheus label (app.kubernetes.io/team and
// app_kubernetes_io/team) are an error: their series could not tell them
// apart.
func NewCheckerLabels(allowlist []string) (*CheckerLabels, error) {
	names := slices.Sorted(slices.Values(allowlist))
	names = slices.DeleteFunc(slices.Compact(names), func(n string) bool { return n == "" })
	l := &CheckerLabels{names: names, values: map[types.NamespacedName][]string{}, objectives: map[types.NamespacedName]float64{}}
	seen := map[string]string{}
	for _, n := range names {
		p := PrometheusLabelName(n)
		if other, ok := seen[p]; ok {
			return nil, fmt.Errorf("metric label allowlist: labels %q and %q both become %s", other, n, p)
		}
		seen[p] = n
		l.promNames = append(l.promNames, p)
	}
	return l, nil
}

// PrometheusLabelName is the label that the WebChecker label name is
// copied to: LabelPrefix followed by name with every character outside
// [a-zA-Z0-9_] replaced by an underscore, as kube-state-metrics does.
func PrometheusLabelName(name string) string {
	return LabelPrefix + strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// LabelNames returns the Prometheus label names added to every
// per-checker series, sorted by the WebChecker label they come from.
func (l *CheckerLabels) LabelNames() []string {
	if l == nil {
		return nil
	}
	return slices.Clone(l.promNames)
}

// Set records the allowlisted labels among the checker's labels, and its
// objective; an objective that is not valid is not recorded (the
// reconciler reports it).
func (l *CheckerLabels) Set(key types.NamespacedName, labels map[string]string) {
	if l == nil {
		return
	}
	var values []string
	if len(l.names) > 0 {
		values = make([]string, len(l.names))
		for i, n := range l.names {
			values[i] = labels[n]
		}
	}
	objective, ok, _ := webcheckerv1alpha1.SLOObjective(labels)
	l.mu.Lock()
	defer l.mu.Unlock()
	if values != nil {
		l.values[key] = values
	}
	if ok {
		l.objectives[key] = objective
	} else {
		delete(l.objectives, key)
	}
}

// Delete forgets the checker's labels.
func (l *CheckerLabels) Delete(key types.NamespacedName) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.values, key)
	delete(l.objectives, key)
}

// objectiveOf returns the checker's availability objective, and false
// when its labels set none.
func (l *CheckerLabels) objectiveOf(key types.NamespacedName) (float64, bool) {
	if l == nil {
		return 0, false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	objective, ok := l.objectives[key]
	return objective, ok
}

// valuesOf returns the values of the allowlisted labels of the checker, in
// the order of LabelNames; empty strings for one never Set.
func (l *CheckerLabels) valuesOf(key types.NamespacedName) []string {
	if l == nil || len(l.names) == 0 {
		return nil
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if v, ok := l.values[key]; ok {
		return v // never modified: Set replaces the slice
	}
	return make([]string, len(l.names))
}

// Len returns the number of checkers whose labels are kept.
func (l *CheckerLabels) Len() int {
	if l == nil {
		return 0
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.values)
}
