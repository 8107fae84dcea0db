package controllers

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/networkio/webchecker/probing/egress"
)

// EgressAllowAnnotation on a Namespace lists address ranges (comma
// separated CIDRs or addresses) that the probes of its checkers may reach
// even inside a range the egress policy denies, as --allow-cidrs does for
// every namespace. Namespaces are cluster-scoped: only those who may
// update Namespaces (cluster admins) set it, never a namespace's editors.
// It is judged at dial time, with the policy; a change takes effect at the
// checkers' next probes.
const EgressAllowAnnotation = "webchecker.test.network.io/egress-allow-cidrs"

// maxEgressAllowRanges bounds the ranges one namespace's annotation may
// list: each is compared at every connection of its checkers.
const maxEgressAllowRanges = 64

// EgressAllowanceError is an EgressAllowAnnotation that does not parse:
// the namespace's checkers are not probed until it is fixed (a probe with
// less than the admin allowed would report a denial the admin did not mean).
type EgressAllowanceError struct {
	// Message names the namespace and the annotation and says what is
	// wrong (a cluster admin wrote the value, not a namespace editor).
	Message string
}

func (e *EgressAllowanceError) Error() string { return e.Message }

// EgressAllowanceOf is the allowance ns's EgressAllowAnnotation gives its
// checkers; nil for a nil ns or one without the annotation.
func EgressAllowanceOf(ns *corev1.Namespace) ([]netip.Prefix, error) {
	if ns == nil {
		return nil, nil
	}
	value, ok := ns.Annotations[EgressAllowAnnotation]
	if !ok {
		return nil, nil
	}
	fields := strings.Split(value, ",")
	if len(fields) > maxEgressAllowRanges {
		return nil, &EgressAllowanceError{Message: fmt.Sprintf("namespace %s: annotation %s lists %d ranges, more than %d", ns.Name, EgressAllowAnnotation, len(fields), maxEgressAllowRanges)}
	}
	prefixes, err := egress.ParseCIDRs(fields)
	if err != nil {
		return nil, &EgressAllowanceError{Message: fmt.Sprintf("namespace %s: annotation %s: %v", ns.Name, EgressAllowAnnotation, err)}
	}
	return prefixes, nil
}

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
// EgressAllowAnnotation.
func egressAllowanceChanged() predicate.TypedPredicate[*corev1.Namespace] {
	return predicate.TypedFuncs[*corev1.Namespace]{
		CreateFunc:  func(event.TypedCreateEvent[*corev1.Namespace]) bool { return false },
		DeleteFunc:  func(event.TypedDeleteEvent[*corev1.Namespace]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[*corev1.Namespace]) bool { return false },
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Namespace]) bool {
			oldValue, oldOK := e.ObjectOld.GetAnnotations()[EgressAllowAnnotation]
			newValue, newOK := e.ObjectNew.GetAnnotations()[EgressAllowAnnotation]
			return oldOK != newOK || oldValue != newValue
		},
	}
}
