package probing

import (
	"context"
	"fmt"
	"time"
)

// KindProber probes targets of every Kind: it hands each Target to the
// prober of its Kind. It is safe for concurrent use.
type KindProber struct {
	http   *HTTPProber
	byKind map[Kind]Prober
}

var _ Prober = (*KindProber)(nil)

// NewProber returns a KindProber whose probers share opts (see
// ProberOptions for the defaults): the DNS server, the egress policy and
// the read limits apply to every kind.
func NewProber(opts ProberOptions) *KindProber {
	http := NewHTTPProber(opts)
	return &KindProber{
		http: http,
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
	return prober.Probe(ctx, t)
}

// CloseIdleConnections closes the keep-alive connections that are not in
// use (only http targets with ReuseConnections keep any).
func (p *KindProber) CloseIdleConnections() { p.http.CloseIdleConnections() }
