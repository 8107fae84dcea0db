package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// SetupWithManager registers the reconciler with mgr.
func (r *WebCheckerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	switch {
	case r.Scheduler == nil:
		return errors.New("webchecker reconciler: Scheduler is required")
	case r.Ownership == nil:
		return errors.New("webchecker reconciler: Ownership is required")
	case r.Trigger == nil:
		return errors.New("webchecker reconciler: Trigger is required")
	}
	// The checkers this replica does not probe are scheduled without
	// their targets, built when a turn finds one owned.
	r.Scheduler.SetBuilder(r.buildCheck)
	// Status writes bump resourceVersion but not generation: they must not
	// trigger another reconcile (and another write), but for those of
	// another replica (vantage point entries, status.shard).
	// Label changes matter to the metrics and to which
	// WebCheckerMaintenances select the checker.
	changed := predicate.Or(predicate.Predicate(predicate.GenerationChangedPredicate{}), vantagePointsChanged(), shardChanged(), predicate.LabelChangedPredicate{})
	name := cmp.Or(r.Name, ControllerName)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		// The priority queue puts renames behind the other writes (see
		// renameResult).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers(), UsePriorityQueue: ptr.To(true)}).
		WithLogConstructor(reconcileLogConstructor(mgr.GetLogger(), name)).
		For(&webcheckerv1alpha1.WebChecker{}, builder.WithPredicates(changed)).
		WatchesRawSource(source.Channel(r.Trigger, &handler.TypedEnqueueRequestForObject[*webcheckerv1alpha1.WebChecker]{})).
		WatchesRawSource(source.Kind(mgr.GetCache(), &webcheckerv1alpha1.WebCheckerMaintenance{},
			handler.TypedEnqueueRequestsFromMapFunc(checkersSelectedBy(mgr.GetCache()))))
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &webcheckerv1alpha1.WebChecker{}, DependsOnField, dependsOnIndex); err != nil {
		return fmt.Errorf("indexing WebCheckers by dependency: %w", err)
	}
	b = b.WatchesRawSource(source.Kind(mgr.GetCache(), &webcheckerv1alpha1.WebChecker{},
		handler.TypedEnqueueRequestsFromMapFunc(dependentsOf(mgr.GetCache())), dependencyChanged()))
	if r.Secrets != nil {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &webcheckerv1alpha1.WebChecker{}, SecretNamesField, secretNamesIndex); err != nil {
			return fmt.Errorf("indexing WebCheckers by Secret: %w", err)
		}
		b = b.WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Secret{},
			handler.TypedEnqueueRequestsFromMapFunc(checkersUsingSecret(mgr.GetCache()))))
	}
	switch {
	case r.NamespaceSelector != nil:
		// Every change: labels move a namespace in or out of the
		// selection, and its annotation may change its allowance.
		b = b.WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Namespace{},
			handler.TypedEnqueueRequestsFromMapFunc(checkersInNamespace(mgr.GetCache()))))
	case r.NamespaceEgress:
		b = b.WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Namespace{},
			handler.TypedEnqueueRequestsFromMapFunc(checkersInNamespace(mgr.GetCache())), egressAllowanceChanged()))
	}
	return b.Complete(r)
}

// workers is Workers, defaulted.
func (r *WebCheckerReconciler) workers() int {
	if r.Workers > 0 {
		return r.Workers
	}
	return DefaultReconcileWorkers
}
