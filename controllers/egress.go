package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/networkio/webchecker/controllers/checkspec"
)

// namespaceOf reads the Namespace of the checkers in namespace from reader
// (the cache); nil when it is not there.
func namespaceOf(ctx context.Context, reader client.Reader, namespace string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	err := reader.Get(ctx, types.NamespacedName{Name: namespace}, ns)
	switch {
	case err == nil:
		return ns, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("reading Namespace %q: %w", namespace, err)
	}
}

// egressAllowanceChanged lets through the Namespace updates that change
// checkspec.EgressAllowAnnotation.
func egressAllowanceChanged() predicate.TypedPredicate[*corev1.Namespace] {
	return predicate.TypedFuncs[*corev1.Namespace]{
		CreateFunc:  func(event.TypedCreateEvent[*corev1.Namespace]) bool { return false },
		DeleteFunc:  func(event.TypedDeleteEvent[*corev1.Namespace]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[*corev1.Namespace]) bool { return false },
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Namespace]) bool {
			oldValue, oldOK := e.ObjectOld.GetAnnotations()[checkspec.EgressAllowAnnotation]
			newValue, newOK := e.ObjectNew.GetAnnotations()[checkspec.EgressAllowAnnotation]
			return oldOK != newOK || oldValue != newValue
		},
	}
}
