package probing

import (
	"context"
	"fmt"
	"time"
)

// KindProber probes targets of every Kind: it hands each Target to the
// prober of its URL's scheme (see KindOf). It is safe for concurrent use.
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

// Probe probes t with the prober of its kind. A target of a kind no prober
// knows (its URL does not parse, or has another scheme) gives
// ReasonInvalidTarget.
func (p *KindProber) Probe(ctx context.Context, t Target) Result {
	kind := KindOf(t.URL)
	prober, ok := p.byKind[kind]
	if !ok {
		start := time.Now()
		err := t.Validate()
		if err == nil {
			err = fmt.Errorf("invalid target: no prober for %s targets", kind)
		}
		return finish(Result{Reason: ReasonInvalidTarget, Message: err.Error()}, start)
	}
	return prober.Probe(ctx, t)
}

// CloseIdleConnections closes the keep-alive connections that are not in
// use (only http targets with ReuseConnections keep any).
func (p *KindProber) CloseIdleConnections() { p.http.CloseIdleConnections() }
