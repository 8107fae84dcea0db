package probing

import (
	"context"
	"net"
	"time"
)

// keptAliveConnections is the TCP keep-alive period of the connections
// that outlive their probe (HTTP targets with ReuseConnections): a peer
// that vanished is noticed while the connection is idle.
const keptAliveConnections = 30 * time.Second

// newDialer returns the dialer of every probe connection: names resolved
// with opts.DNSServer (see NewResolver), and the egress policy checked on
// the address of every connection attempt, after resolution. Its
// connections have no TCP keep-alive: a probe's connection lives for one
// probe, shorter than any keep-alive period, and turning keep-alive on
// costs four system calls per connection. withKeepAlive gives the dialer
// of connections kept between probes.
func newDialer(opts ProberOptions) *net.Dialer {
	d := &net.Dialer{
		KeepAlive: -1,                          // off
		Resolver:  NewResolver(opts.DNSServer), // nil means net.DefaultResolver
	}
	if opts.Egress != nil {
		d.Control = opts.Egress.Control
	}
	return d
}

// dialTCP connects to addr (host:port) over TCP with d, restricted to the
// addresses of family. The context bounds resolution and connection.
func dialTCP(ctx context.Context, d *net.Dialer, family IPFamily, addr string) (net.Conn, error) {
	return familyDialer(d.DialContext, family)(ctx, "tcp", addr)
}

// dialTarget connects a tcp, tls or grpc probe of t to addr (host:port):
// directly, restricted to t's IP family, or, when t has a Proxy, through a
// tunnel the proxy opens with CONNECT (see dialThroughProxy). Through a
// proxy, the egress policy and the IP family apply to the connection to
// the proxy, which reaches addr on its own; the proxy's failures are
// *proxyError (ReasonProxyFailed, or ReasonEgressDenied for a proxy
// address the policy denies), whose text names the proxy. The tunnel
// carries no deadline; the caller sets its own.
func dialTarget(ctx context.Context, d *net.Dialer, t Target, addr string) (net.Conn, error) {
	if t.Proxy != nil {
		return dialThroughProxy(ctx, d, t.IPFamily, *t.Proxy, nil, addr)
	}
	return dialTCP(ctx, d, t.IPFamily, addr)
}

// withKeepAlive returns a copy of d whose connections have TCP keep-alive
// (see keptAliveConnections).
func withKeepAlive(d *net.Dialer) *net.Dialer {
	kept := *d
	kept.KeepAlive = keptAliveConnections
	return &kept
}
