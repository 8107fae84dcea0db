// Package clusternet keeps an egress.Policy's cluster networks current: the
// address ranges where the cluster itself lives, which no checker may probe
// however its target resolves.
//
// A Watcher watches, with a cache of its own:
//
//   - the networking.k8s.io/v1 ServiceCIDR objects (every Service's
//     ClusterIP is in one of their spec.cidrs);
//   - the EndpointSlices of the Service "kubernetes" in "default" (label
//     kubernetes.io/service-name=kubernetes): the API server's own
//     addresses;
//   - the Nodes: each one's status.addresses (the kubelets' and the nodes'
//     own ports) and spec.podCIDRs (every pod's address).
//
// It hands the ranges to the policy (egress.Policy.SetClusterNetworks), all
// at once, whenever a watch reports a change, at most once per MinInterval.
//
// What happens when they cannot be listed: the policy of a manager that
// watches them is made with egress.Options.AwaitClusterNetworks, so until
// the first complete listing (all three watches synced) every address
// outside the allowed ranges is denied, with the rule "cluster networks not
// listed yet": a replica that does not know the cluster's networks cannot
// tell them from the outside, and fails closed, visibly (Ready False,
// EgressDenied, on every checker it probes). The manager waits a bounded
// time for that listing before joining the ring (Listed). Missing RBAC or
// an API server that stays down keeps it so, and the Watcher logs which
// watch has not synced every LogInterval. Once listed, a watch that breaks
// later (API server down, RBAC revoked) keeps the last listing, which the
// informers refresh when they reconnect. An API server that does not serve
// ServiceCIDRs (before Kubernetes 1.33) leaves them out, logged once at
// start: give the Service range with --deny-cidrs there.
package clusternet
