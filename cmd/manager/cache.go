package main

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/sharding"
)

// cacheOptions restricts the manager's cache to what a replica reads: of
// Leases, those of its own ring only; of every object, neither its
// managedFields nor kubectl's last-applied-configuration annotation (see
// stripUnread).
func cacheOptions(leaseNamespace, ringName string) cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: sharding.LeaseCacheOptions(leaseNamespace, ringName),
		},
		DefaultTransform: stripUnread(),
	}
}

// lastAppliedAnnotation is where kubectl apply (client-side) keeps a copy
// of the whole object as applied.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// stripUnread drops from every cached object what no component of a
// replica reads: its managedFields and kubectl's last-applied-configuration
// annotation, which together are often larger than the rest of a
// WebChecker. Status patches are merge patches between two copies of the
// cached object (with the resourceVersion as optimistic lock), and the
// vantage points' entries are applied server-side from fields of their
// own, so they neither need nor touch either. The strings that repeat
// across WebCheckers are shared (see stringPool).
func stripUnread() toolscache.TransformFunc {
	stripManagedFields := cache.TransformStripManagedFields()
	pool := newStringPool(poolLimit, poolMaxLen)
	return func(in any) (any, error) {
		out, err := stripManagedFields(in)
		if err != nil {
			return nil, err
		}
		if wc, ok := out.(*webcheckerv1alpha1.WebChecker); ok {
			pool.internChecker(wc)
		}
		if obj, err := apimeta.Accessor(out); err == nil {
			annotations := obj.GetAnnotations()
			if _, ok := annotations[lastAppliedAnnotation]; ok {
				delete(annotations, lastAppliedAnnotation)
				if len(annotations) == 0 {
					annotations = nil
				}
				obj.SetAnnotations(annotations)
			}
		}
		return out, nil
	}
}
