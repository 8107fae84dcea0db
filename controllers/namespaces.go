package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// NamespaceScope limits the namespaces whose WebCheckers a replica serves.
// The zero value serves every namespace.
type NamespaceScope struct {
	// Namespaces lists the namespaces served; empty means all. The cache
	// then watches WebCheckers and Secrets in these namespaces only.
	Namespaces []string
	// Selector, when not nil, serves only namespaces whose labels match it
	// (read from the cache, which then watches matching Namespaces).
	Selector labels.Selector
}

// ApplyTo restricts the cache options opts (see CacheOptions) to the
// scope.
func (s NamespaceScope) ApplyTo(opts cache.Options) cache.Options {
	if len(s.Namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range s.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	if s.Selector != nil {
		if opts.ByObject == nil {
			opts.ByObject = map[client.Object]cache.ByObject{}
		}
		opts.ByObject[&corev1.Namespace{}] = cache.ByObject{Label: s.Selector}
	}
	return opts
}

// String describes the scope for logs.
func (s NamespaceScope) String() string {
	namespaces := "all namespaces"
	if len(s.Namespaces) > 0 {
		namespaces = fmt.Sprintf("namespaces %v", s.Namespaces)
	}
	if s.Selector == nil {
		return namespaces
	}
	return fmt.Sprintf("%s labelled %s", namespaces, s.Selector)
}

// namespaceSelected reports whether namespace is in the cache, which holds
// only the Namespaces that match the scope's selector.
func namespaceSelected(ctx context.Context, reader client.Reader, namespace string) (bool, error) {
	err := reader.Get(ctx, types.NamespacedName{Name: namespace}, &corev1.Namespace{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("reading Namespace %q: %w", namespace, err)
	}
}

// checkersInNamespace maps a Namespace (entering or leaving the selection)
// to the WebCheckers in it.
func checkersInNamespace(reader client.Reader) func(context.Context, *corev1.Namespace) []reconcile.Request {
	return func(ctx context.Context, ns *corev1.Namespace) []reconcile.Request {
		var list webcheckerv1alpha1.WebCheckerList
		if err := reader.List(ctx, &list, client.InNamespace(ns.Name)); err != nil {
			return nil // the cache answers from memory
		}
		return requestsFor(list.Items)
	}
}

func requestsFor(items []webcheckerv1alpha1.WebChecker) []reconcile.Request {
	requests := make([]reconcile.Request, 0, len(items))
	for i := range items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&items[i])})
	}
	return requests
}
