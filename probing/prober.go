package probing

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// KindProber probes targets of every Kind: it hands each Target to the
// prober of its Kind. It is safe for concurrent use.
type KindProber struct {
	// dialer resolves the names of targets whose addresses are probed one
	// by one (see probeEachAddress).
	dialer *net.Dialer
	http   *HTTPProber
	byKind map[Kind]Prober
	opts   ProberOptions
}

var _ Prober = (*KindProber)(nil)

// NewProber returns a KindProber whose probers share opts (see
// ProberOptions for the defaults): the DNS server, the egress policy and
// the read limits apply to every kind.
func NewProber(opts ProberOptions) *KindProber {
	http := NewHTTPProber(opts)
	return &KindProber{
		dialer: newDialer(opts.withDefaults()),
		opts:   opts,
		http:   http,
		byKind: map[Kind]Prober{
			KindHTTP: http,
			KindDNS:  NewDNSProber(opts),
			KindTCP:  NewTCPProber(opts),
			KindTLS:  NewTCPProber(opts),
			KindGRPC: NewGRPCProber(opts),
		},
	}
}

// Probe probes t with the prober of its kind. The zero Target (not built
// by NewTarget) gives ReasonInvalidTarget.
func (p *KindProber) Probe(ctx context.Context, t Target) Result {
	prober, ok := p.byKind[t.Kind()]
	if !ok {
		start := time.Now()
		msg := errNotBuilt.Error()
		if t.Kind() != "" {
			msg = fmt.Sprintf("invalid target: no prober for %s targets", t.Kind())
		}
		return finish(Result{Reason: ReasonInvalidTarget, Message: msg}, start)
	}
	if denied, ok := p.deniedDNSServer(t); ok {
		return denied
	}
	if t.b.Addresses != AddressesFirst {
		return t.b.withClientCertificate(p.probeEachAddress(ctx, t, prober), time.Now())
	}
	return t.b.withClientCertificate(prober.Probe(ctx, t), time.Now())
}

// withClientCertificate returns res with what t's client certificate
// (TLSOptions.ClientCertificate) adds at now: its expiry
// (Result.ClientCertificateExpiry), and a successful probe warns
// (CertificateWarning, unless the server's chain already does) when it
// expires within CertExpiryWarning or has expired; a failed one says
// when it expired, if it has, since a server refusing it says nothing
// of why.
func (t *builtTarget) withClientCertificate(res Result, now time.Time) Result {
	if t.clientExpiry == nil {
		return res
	}
	res.ClientCertificateExpiry = t.clientExpiry // never changed
	expiry := *t.clientExpiry
	at := expiry.UTC().Format(time.RFC3339)
	switch {
	case !res.Success && !now.Before(expiry):
		res.Message = BoundMessage(res.Message + " (the client certificate expired at " + at + ")")
	case !res.Success, res.CertificateWarning != "", t.CertExpiryWarning <= 0, expiry.Sub(now) >= t.CertExpiryWarning:
	case !now.Before(expiry):
		res.CertificateWarning = "the client certificate expired at " + at
	default:
		res.CertificateWarning = fmt.Sprintf("the client certificate expires at %s, in less than %s", at, t.CertExpiryWarning)
	}
	return res
}

// deniedDNSServer returns the result of a probe of t whose own DNS
// server (TargetSpec.DNSServer) the egress policy denies, and true; false
// when t has none or it is allowed. The check comes before the probe, so
// that the failure names the DNS server instead of a lookup that failed.
func (p *KindProber) deniedDNSServer(t Target) (Result, bool) {
	if p.opts.Egress == nil || t.b.DNSServer == "" {
		return Result{}, false
	}
	start := time.Now()
	server := netip.MustParseAddrPort(t.b.DNSServer) // checked by NewTarget
	if err := p.opts.Egress.CheckAllowing(server.Addr(), t.b.EgressAllow); err != nil {
		return finish(Result{Reason: ReasonEgressDenied, Message: "DNS server " + t.b.DNSServer + ": " + err.Error()}, start), true
	}
	return Result{}, false
}

// CloseIdleConnections closes the keep-alive connections that are not in
// use (only http targets with ReuseConnections keep any).
func (p *KindProber) CloseIdleConnections() { p.http.CloseIdleConnections() }
