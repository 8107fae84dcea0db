package main

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// newScheme returns a scheme with every type a replica reads or writes
// through the manager's client and cache: Secrets, Namespaces and Nodes
// (core), Leases (coordination), EndpointSlices (discovery), ServiceCIDRs
// (networking) and WebChecker. Nothing else: client-go's scheme
// of every built-in group would hold the types of some forty API groups in
// every replica's memory for nothing. The event recorder and the scrape
// authorizer use clients of their own. Adding these static types fails
// only on a programming error.
func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(coordinationv1.AddToScheme(scheme))
	utilruntime.Must(discoveryv1.AddToScheme(scheme))
	utilruntime.Must(networkingv1.AddToScheme(scheme))
	utilruntime.Must(webcheckerv1alpha1.AddToScheme(scheme))
	return scheme
}
