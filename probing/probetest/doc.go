// Package probetest provides utilities for testing probers, in the spirit of
// net/http/httptest.
//
// Its main piece is DNSServer, a tiny authoritative DNS server that listens
// on the loopback interface and answers A and AAAA queries from a fixed
// table. Tests point a resolver at it (see probing.NewResolver) so that host
// names can be used in probe targets without a single packet leaving the
// machine, and so that "no such host" failures are deterministic.
//
// NewCertificate generates certificates with a chosen validity, for TLS test
// servers whose certificate is about to expire or already has;
// CertificateTemplate and Chain build chains of them (roots, intermediates,
// cross-signs, leaves) as servers send them.
//
// This package is meant for tests only; it is not a general purpose DNS
// server.
package probetest
