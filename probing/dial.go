package probing

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/networkio/webchecker/probing/egress"
)

// keptAliveConnections is the TCP keep-alive period of the connections
// that outlive their probe (HTTP targets with ReuseConnections): a peer
// that vanished is noticed while the connection is idle.
const keptAliveConnections = 30 * time.Second

// newDialer returns the dialer of every probe connection: names resolved
// with opts.DNSServer (see NewResolver), and the egress policy checked on
// the address of every connection attempt, after resolution, with the
// allowance of the dial's context (see withEgressAllowance). Its
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
		d.ControlContext = opts.Egress.ControlContext
	}
	return d
}

// resolvingWith returns d, or, when server (a target's DNSServer) is not
// empty, a copy of d whose names are resolved by server, every query's
// connection judged by d's egress policy.
func resolvingWith(d *net.Dialer, server string) *net.Dialer {
	if server == "" {
		return d
	}
	own := *d
	own.Resolver = resolverAsking(server, d.ControlContext)
	return &own
}

// withEgressAllowance returns ctx carrying t's egress allowance
// (Target.EgressAllow), which the dialer's policy reads at every
// connection made with it.
func withEgressAllowance(ctx context.Context, t *builtTarget) context.Context {
	return egress.ContextWithAllowed(ctx, t.EgressAllow)
}

// dialTCP connects to addr (host:port) over TCP with d, restricted to the
// addresses of family. The context bounds resolution and connection.
func dialTCP(ctx context.Context, d *net.Dialer, family IPFamily, addr string) (net.Conn, error) {
	return familyDialer(d.DialContext, family)(ctx, "tcp", addr)
}

// dialTarget connects a tcp, tls, grpc or dns (over TCP) probe of t to
// addr (host:port), noting in seen (which may be nil) the addresses its
// name resolved to (see resolution):
// directly, restricted to t's IP family, or, when t has a Proxy, through a
// tunnel the proxy opens with CONNECT (see dialThroughProxy). Through a
// proxy, the egress policy and the IP family apply to the connection to
// the proxy, which reaches addr on its own; the proxy's failures are
// *proxyError (ReasonProxyFailed, or ReasonEgressDenied for a proxy
// address the policy denies), whose text names the proxy. The tunnel
// carries no deadline; the caller sets its own.
//
// A direct connection that the server reset before connect returned is
// returned as a resetConn: the server accepted it (a refused connection
// fails with ECONNREFUSED), and whether its reset shows at the connect or
// at the first read or write is timing, so it shows at the read or write.
func dialTarget(ctx context.Context, d *net.Dialer, t *builtTarget, addr string, seen *resolution) (net.Conn, error) {
	ctx = seen.trace(withEgressAllowance(ctx, t))
	d = resolvingWith(d, t.DNSServer)
	if t.Proxy != nil {
		return dialThroughProxy(ctx, d, t.IPFamily, *t.Proxy, nil, addr)
	}
	conn, err := dialTCP(ctx, d, t.IPFamily, addr)
	if err != nil && errors.Is(err, syscall.ECONNRESET) {
		return newResetConn(err), nil
	}
	return conn, err
}

// resetConn stands for a connection reset before connect returned: every
// read and write fails with the connect's error, as they would have on the
// connection.
type resetConn struct {
	err    error
	remote net.Addr
}

// newResetConn returns the resetConn of a connect that failed with err.
func newResetConn(err error) resetConn {
	c := resetConn{err: err, remote: &net.TCPAddr{}}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Addr != nil {
		c.remote = opErr.Addr
	}
	return c
}

func (c resetConn) Read([]byte) (int, error)         { return 0, c.err }
func (c resetConn) Write([]byte) (int, error)        { return 0, c.err }
func (c resetConn) Close() error                     { return nil }
func (c resetConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c resetConn) RemoteAddr() net.Addr             { return c.remote }
func (c resetConn) SetDeadline(time.Time) error      { return nil }
func (c resetConn) SetReadDeadline(time.Time) error  { return nil }
func (c resetConn) SetWriteDeadline(time.Time) error { return nil }

// withKeepAlive returns a copy of d whose connections have TCP keep-alive
// (see keptAliveConnections).
func withKeepAlive(d *net.Dialer) *net.Dialer {
	kept := *d
	kept.KeepAlive = keptAliveConnections
	return &kept
}
