package main

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
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

// checkerKeys returns a function listing every WebChecker in c (the
// manager's cache) with the number of vantage points it asks for. The
// Assigner calls it at every change of the ring, between publishing the
// ring and handing the checkers that moved to the scheduler: the turns
// due meanwhile are made up only after it returns. So it reads the
// informer's store, whose entries are the cached objects themselves,
// rather than List, which copies every cached object into the list's
// Items even without a deep copy (768 bytes each, plus the garbage
// collection that follows: 2-3 s of a ring change at 50,000 checkers on a
// loaded machine). A cache that spans several namespaces (--namespaces)
// offers no single store, and is listed.
func checkerKeys(c cache.Cache) func(ctx context.Context) ([]sharding.Checker, error) {
	return func(ctx context.Context) ([]sharding.Checker, error) {
		informer, err := c.GetInformer(ctx, &webcheckerv1alpha1.WebChecker{})
		if err != nil {
			return nil, fmt.Errorf("getting the WebChecker informer: %w", err)
		}
		stored, ok := informer.(indexedInformer)
		if !ok {
			return listedCheckers(ctx, c)
		}
		objs := stored.GetIndexer().List()
		checkers := make([]sharding.Checker, 0, len(objs))
		for _, obj := range objs {
			wc, ok := obj.(*webcheckerv1alpha1.WebChecker)
			if !ok {
				return nil, fmt.Errorf("the WebChecker informer holds a %T", obj)
			}
			checkers = append(checkers, shardingChecker(wc))
		}
		return checkers, nil
	}
}

// indexedInformer is what client-go's shared informers, which a cache of
// one namespace or of all hands out, offer beyond cache.Informer: the
// store of the objects they cache. Its objects must not be modified.
type indexedInformer interface {
	GetIndexer() toolscache.Indexer
}

// listedCheckers lists every WebChecker in reader, each copied into the
// list (see checkerKeys).
func listedCheckers(ctx context.Context, reader client.Reader) ([]sharding.Checker, error) {
	var list webcheckerv1alpha1.WebCheckerList
	// Only the keys and vantage points are read: no deep copy of every
	// cached object.
	if err := reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing WebCheckers: %w", err)
	}
	checkers := make([]sharding.Checker, 0, len(list.Items))
	for i := range list.Items {
		checkers = append(checkers, shardingChecker(&list.Items[i]))
	}
	return checkers, nil
}

// shardingChecker is what the Assigner needs of wc.
func shardingChecker(wc *webcheckerv1alpha1.WebChecker) sharding.Checker {
	return sharding.Checker{
		Key:           client.ObjectKeyFromObject(wc),
		VantagePoints: int(ptr.Deref(wc.Spec.VantagePoints, webcheckerv1alpha1.DefaultVantagePoints)),
	}
}
