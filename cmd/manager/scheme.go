package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// newScheme returns a scheme with every type a replica reads or writes:
// the built-in Kubernetes types (Leases, Events, Secrets, Namespaces) and
// WebChecker. Adding these static types fails only on a programming error.
func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(webcheckerv1alpha1.AddToScheme(scheme))
	return scheme
}
