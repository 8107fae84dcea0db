package controllers

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
)

// DependsOnField indexes WebCheckers by the names in their spec.dependsOn,
// so that a change of a checker's Ready condition reaches the checkers that
// depend on it.
const DependsOnField = "spec.dependsOn"

// dependencies is what the checkers a checker depends on say.
type dependencies struct {
	// invalid, when not empty, is why the checker is not probed: a
	// dependency that does not exist, or a cycle.
	invalid string
	// down names the first dependency (in spec order) whose Ready
	// condition is False, and downReason its reason; empty when none is.
	down, downReason string
}

// dependenciesOf reads the checkers wc depends on from the cache: the
// first one that is down, or why the dependencies are invalid (one is
// missing, or they lead back to wc within MaxDependencyDepth checkers). An
// error is a failed read worth retrying.
func (r *WebCheckerReconciler) dependenciesOf(ctx context.Context, wc *webcheckerv1alpha1.WebChecker) (dependencies, error) {
	var d dependencies
	if len(wc.Spec.DependsOn) == 0 {
		return d, nil
	}
	for _, name := range wc.Spec.DependsOn {
		dep, err := r.dependency(ctx, wc.Namespace, name)
		if err != nil {
			return dependencies{}, err
		}
		if dep == nil {
			d.invalid = fmt.Sprintf("spec.dependsOn: WebChecker %s not found in namespace %s", name, wc.Namespace)
			return d, nil
		}
		if ready := meta.FindStatusCondition(dep.Status.Conditions, webcheckerv1alpha1.ConditionReady); d.down == "" && ready != nil && ready.Status == metav1.ConditionFalse {
			d.down, d.downReason = name, ready.Reason
		}
	}
	cycle, err := r.cycleThrough(ctx, wc)
	if err != nil {
		return dependencies{}, err
	}
	if cycle != nil {
		d.invalid = "spec.dependsOn: " + strings.Join(cycle, " -> ") + " is a cycle"
	}
	return d, nil
}

// dependency returns the checker name of namespace, nil when there is
// none.
func (r *WebCheckerReconciler) dependency(ctx context.Context, namespace, name string) (*webcheckerv1alpha1.WebChecker, error) {
	dep := &webcheckerv1alpha1.WebChecker{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting dependency %s: %w", name, err)
	}
	return dep, nil
}

// cycleThrough returns a path of dependsOn from wc back to wc (its names,
// wc first and last), reading at most MaxDependencyDepth checkers
// breadth-first; nil when there is none within them.
func (r *WebCheckerReconciler) cycleThrough(ctx context.Context, wc *webcheckerv1alpha1.WebChecker) ([]string, error) {
	return findCycle(wc.Name, wc.Spec.DependsOn, webcheckerv1alpha1.MaxDependencyDepth, func(name string) ([]string, error) {
		dep, err := r.dependency(ctx, wc.Namespace, name)
		if err != nil || dep == nil {
			return nil, err
		}
		return dep.Spec.DependsOn, nil
	})
}

// findCycle returns the shortest path of dependencies from root (which
// depends on dependsOn) back to root, root first and last, reading the
// dependencies of at most limit checkers breadth-first through
// dependenciesOf (nil for a checker that does not exist); nil when there
// is none within them.
func findCycle(root string, dependsOn []string, limit int, dependenciesOf func(name string) ([]string, error)) ([]string, error) {
	// parent of each checker reached: the first one found depending on it.
	parent := map[string]string{}
	queue := []string{}
	for _, name := range dependsOn {
		if _, seen := parent[name]; !seen {
			parent[name] = root
			queue = append(queue, name)
		}
	}
	for read := 0; len(queue) > 0 && read < limit; read++ {
		name := queue[0]
		queue = queue[1:]
		next, err := dependenciesOf(name)
		if err != nil {
			return nil, err
		}
		for _, n := range next {
			if n == root {
				return pathTo(parent, name, root), nil
			}
			if _, seen := parent[n]; !seen {
				parent[n] = name
				queue = append(queue, n)
			}
		}
	}
	return nil, nil
}

// pathTo is the path root -> ... -> last -> root through parent.
func pathTo(parent map[string]string, last, root string) []string {
	path := []string{root}
	for n := last; n != root; n = parent[n] {
		path = append(path, n)
	}
	// path is root, last, ..., first: reverse all but the root.
	for i, j := 1, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return append(path, root)
}

// setDependencyDown rewrites a False Ready condition of s from a probe
// (not a spec that cannot be probed) while the dependency down is: reason
// DependencyDown, naming it, then the checker's own failure. A condition
// already so (kept by a threshold) stays.
func (v statusView) setDependencyDown(s *webcheckerv1alpha1.WebCheckerStatus) {
	if v.p.deps.down == "" || v.p.notProbed != nil {
		return
	}
	ready := meta.FindStatusCondition(s.Conditions, webcheckerv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason == webcheckerv1alpha1.ReasonDependencyDown {
		return
	}
	ready.Message = probing.Truncate(fmt.Sprintf("Dependency %s is down (%s); this checker: %s: %s", v.p.deps.down, v.p.deps.downReason, ready.Reason, ready.Message), maxConditionMessage)
	ready.Reason = webcheckerv1alpha1.ReasonDependencyDown
}

func dependsOnIndex(obj client.Object) []string {
	wc, ok := obj.(*webcheckerv1alpha1.WebChecker)
	if !ok {
		return nil
	}
	return wc.Spec.DependsOn
}

// dependentsOf maps a WebChecker to the checkers of its namespace that
// depend on it.
func dependentsOf(reader client.Reader) func(context.Context, *webcheckerv1alpha1.WebChecker) []reconcile.Request {
	return func(ctx context.Context, wc *webcheckerv1alpha1.WebChecker) []reconcile.Request {
		return checkerRequests(ctx, reader, client.InNamespace(wc.Namespace), client.MatchingFields{DependsOnField: wc.Name})
	}
}

// dependencyChanged passes what may change a dependent's status: a checker
// created or deleted (a dependency appears or goes), and a change of its
// Ready condition's status or reason, or of its spec.dependsOn (a cycle
// appears or goes).
func dependencyChanged() predicate.TypedPredicate[*webcheckerv1alpha1.WebChecker] {
	return predicate.TypedFuncs[*webcheckerv1alpha1.WebChecker]{
		UpdateFunc: func(e event.TypedUpdateEvent[*webcheckerv1alpha1.WebChecker]) bool {
			before := conditionOf(e.ObjectOld.Status.Conditions, webcheckerv1alpha1.ConditionReady)
			after := conditionOf(e.ObjectNew.Status.Conditions, webcheckerv1alpha1.ConditionReady)
			return before.Status != after.Status || before.Reason != after.Reason ||
				strings.Join(e.ObjectOld.Spec.DependsOn, ",") != strings.Join(e.ObjectNew.Spec.DependsOn, ",")
		},
		GenericFunc: func(event.TypedGenericEvent[*webcheckerv1alpha1.WebChecker]) bool { return false },
	}
}
