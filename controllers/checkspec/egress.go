package checkspec

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
