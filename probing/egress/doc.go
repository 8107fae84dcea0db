// Package egress decides which network addresses probes may connect to.
//
// A Policy holds denied and allowed address ranges. It is enforced at dial
// time (Policy.Control is a net.Dialer Control hook) on the address the
// connection is really made to, after name resolution: neither a DNS answer
// nor a redirect can lead a probe around it. Allowed ranges are exceptions
// to the denied ones.
//
// The defaults deny link-local addresses and cloud metadata endpoints
// (DefaultDenyCIDRs), which an operator probing on behalf of anyone who may
// create a WebChecker must never reach.
package egress
