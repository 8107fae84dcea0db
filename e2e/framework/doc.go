// Package framework is the test harness shared by the integration tests,
// the end-to-end tests and the local demo: a real control plane
// (kube-apiserver and etcd built by the Makefile, started through envtest)
// with the project's CRDs installed, HTTP targets on loopback that record
// what was probed, and manager processes run from the built binary.
//
// Nothing here sends traffic beyond the loopback interface.
package framework
