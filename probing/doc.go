// Package probing probes one target of any kind (HTTP(S), TCP, TLS, gRPC,
// DNS) and describes the outcome.
//
// A TargetSpec is the fully resolved description of one check (URL,
// method, timeout, accepted status codes, redirect policy, ...): the
// caller resolves every default. NewTarget checks it once, never guessing
// at what it refuses, and returns an immutable Target that knows its Kind
// and holds its URL parsed, so that probes neither parse nor validate. A
// Prober turns a Target into a typed Result that keeps the failure class (Reason) next to a human
// readable Message, so that callers never have to parse error strings:
// KindProber hands each Target to the prober of its kind (HTTPProber,
// TCPProber for tcp and tls, GRPCProber, DNSProber). The HTTP prober also
// reports how long each phase of the exchange took (PhaseTimings, measured
// by the prober's own transport, and through net/http/httptrace where
// net/http does the work).
//
// What a Result says can be trusted: every probe resolves, connects and
// shakes hands anew (unless its Target opts into ReuseConnections), the
// certificate expiry is that of the verified chain, messages are bounded
// whatever the target sends (BoundMessage), and an unchanged failure keeps
// its message, even when its name resolves to rotating addresses.
//
// Scheduling (when to probe which target) lives in the scheduler
// sub-package; this package does not know about Kubernetes objects.
package probing
