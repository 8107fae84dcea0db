// Package framework is the test harness shared by the integration tests,
// the end-to-end tests and the local demo: a real control plane
// (kube-apiserver and etcd built by the Makefile, started through envtest)
// with the project's CRDs installed (or none, for the chart to install),
// HTTP targets on loopback that record what was probed, manager processes
// run from the built binary, and the Helm chart rendered or installed with
// the Helm SDK.
//
// Nothing here sends traffic beyond the loopback interface.
package framework
