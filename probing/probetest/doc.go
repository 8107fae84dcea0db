// Package probetest provides utilities for testing probers, in the spirit of
// net/http/httptest.
//
// DNSServer is a tiny authoritative DNS server that listens on the
// loopback interface and answers from a table: A and AAAA records
// (SetRecords), records of any type with CNAMEs followed (SetResources),
// and chosen response codes (SetRcode). Tests point a resolver at it (see
// probing.NewResolver) so that host names can be used in probe targets
// without a single packet leaving the machine, and so that "no such host"
// failures are deterministic; dns probes query it directly.
//
// NewCertificate generates certificates with a chosen validity, for TLS test
// servers whose certificate is about to expire or already has;
// CertificateTemplate and Chain build chains of them (roots, intermediates,
// cross-signs, leaves) as servers send them.
//
// Target is an HTTP(S) server on a loopback address whose answer a test
// sets (status, delay) and that records every request it receives, for
// the tests of the reconciler, the manager and the e2e suites.
//
// BannerServer is a TCP (or TLS) server for tcp and tls probes: a banner, a
// query and its reply, an early close or no answer at all. Proxy is an
// HTTP proxy (CONNECT and absolute-form requests, optional credentials)
// that reaches loopback addresses only. ServeConns serves raw connections
// on a listener with a handler of the test's, for servers that misbehave
// in ways of their own.
//
// This package is meant for tests only: none of these is a general
// purpose server.
package probetest
