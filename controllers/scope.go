package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// WatchScope limits what a replica watches and serves: the namespaces
// whose WebCheckers it probes, and the Secrets those may use. The zero
// value serves every namespace and every Secret.
type WatchScope struct {
	// Namespaces lists the namespaces served; empty means all. The cache
	// then watches WebCheckers and Secrets in these namespaces only.
	Namespaces []string
	// NamespaceSelector, when not nil, serves only namespaces whose labels
	// match it (read from the cache, which then watches matching
	// Namespaces).
	NamespaceSelector labels.Selector
	// SecretSelector, when not nil, limits the Secrets checkers may use,
	// and the cache holds, to those whose labels match it.
	SecretSelector labels.Selector
}

// helmReleaseSecretType is the type of the Secrets in which Helm records
// every revision of every release: often hundreds of KiB each, and never
// of use to a checker. The cache never holds them.
const helmReleaseSecretType corev1.SecretType = "helm.sh/release.v1"

// ApplyTo restricts the cache options opts to the scope. Secrets (cached
// only when checkers may use them) are held as narrowly as the scope
// allows: those matching SecretSelector, in the namespaces served, and
// never Helm's release records.
func (s WatchScope) ApplyTo(opts cache.Options) cache.Options {
	if len(s.Namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range s.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	byObject := map[client.Object]cache.ByObject{}
	for obj, o := range opts.ByObject {
		byObject[obj] = o
	}
	if s.NamespaceSelector != nil {
		byObject[&corev1.Namespace{}] = cache.ByObject{Label: s.NamespaceSelector}
	}
	byObject[&corev1.Secret{}] = cache.ByObject{
		Label: s.SecretSelector,
		Field: fields.OneTermNotEqualSelector("type", string(helmReleaseSecretType)),
	}
	opts.ByObject = byObject
	return opts
}

// String describes the scope for logs.
func (s WatchScope) String() string {
	desc := "all namespaces"
	if len(s.Namespaces) > 0 {
		desc = fmt.Sprintf("namespaces %v", s.Namespaces)
	}
	if s.NamespaceSelector != nil {
		desc += fmt.Sprintf(" labelled %s", s.NamespaceSelector)
	}
	if s.SecretSelector != nil {
		desc += fmt.Sprintf(", Secrets labelled %s", s.SecretSelector)
	}
	return desc
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
		return checkerRequests(ctx, reader, client.InNamespace(ns.Name))
	}
}

// checkerRequests lists the WebCheckers of reader (the manager's cache)
// that opts select and returns a request for each. Only their keys are
// read, so the cache's own objects are listed, not deep copies: a
// Namespace or a Secret that 100,000 checkers share would otherwise copy
// every one of them. A failed list returns none: the cache answers from
// memory, and fails only when an index is missing, a programming error.
func checkerRequests(ctx context.Context, reader client.Reader, opts ...client.ListOption) []reconcile.Request {
	var list webcheckerv1alpha1.WebCheckerList
	if err := reader.List(ctx, &list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}
