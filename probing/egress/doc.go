// Package egress decides which network addresses probes may connect to.
//
// A Policy holds denied ranges, each with the rule that names it, and
// allowed ranges, which are exceptions to every denied one. It is enforced
// at dial time (Policy.ControlContext is a net.Dialer hook) on the address
// the connection is really made to, after name resolution: neither a DNS
// answer nor a redirect can lead a probe around it. A denial is a
// *DeniedError that names the address and the rule.
//
// Every Policy denies DefaultDenied, the ranges where no external server
// lives: unspecified, loopback, link-local and the clouds' metadata
// services. Options.DenyPrivate adds the IANA special-purpose registries
// (SpecialPurpose). The cluster's own networks (its Service CIDRs, API
// server endpoints, Node addresses and pod CIDRs) come from whoever watches
// them (SetClusterNetworks): this package knows nothing of Kubernetes. An
// IPv6 address that carries an IPv4 address (NAT64, 6to4, Teredo,
// IPv4-compatible) is also judged as that IPv4 address, by every rule.
//
// Options.Allow opens exceptions for every probe; a dial's context may
// carry more (ContextWithAllowed), for the probes of one namespace.
package egress
