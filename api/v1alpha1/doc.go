// Package v1alpha1 contains the WebChecker API, group test.network.io,
// version v1alpha1.
//
// A WebChecker names an HTTP(S) server outside the cluster. The operator
// probes it on a schedule and reports the outcome in the Ready condition.
//
// +kubebuilder:object:generate=true
// +groupName=test.network.io
package v1alpha1
