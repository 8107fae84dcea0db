// Package e2e holds the end-to-end tests: the built manager binary, run as
// real processes against a local control plane, probing HTTP targets on
// loopback, observed through kubectl and the API; and the Helm chart's
// tests: rendering with the Helm SDK, drift against config/, and a real
// install whose Deployment arguments and ServiceAccount run the managers.
//
// `make e2e` runs them alone; `make test` runs them with everything else.
package e2e
