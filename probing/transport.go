package probing

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"syscall"
	"time"
)

// transportKey is what makes two targets need different transports: the
// TLS client settings, the address family, whether connections are kept
// alive between probes, and the proxy (its URL and its credentials, of
// which the key keeps only a hash). Targets with the same key share one
// http.Transport, and so (with reuseConnections) its kept-alive
// connections.
type transportKey struct {
	insecureSkipVerify bool
	serverName         string
	rootCAs            string
	minVersion         uint16
	family             IPFamily
	reuseConnections   bool
	proxyURL           string
	proxyCredentials   [sha256.Size]byte
	// egressAllow is the target's EgressAllow: a connection dialled with
	// one namespace's allowance is not reused for another's probes.
	egressAllow string
	// dnsServer is the target's DNSServer: its names are resolved by it.
	dnsServer string
	// clientCertificate and clientKey are the target's client certificate
	// (see TLSOptions), which its transport presents.
	clientCertificate string
	clientKey         Secret
}

func keyOf(t *TargetSpec) transportKey {
	k := transportKey{
		insecureSkipVerify: t.TLS.InsecureSkipVerify,
		serverName:         t.TLS.ServerName,
		rootCAs:            string(t.TLS.RootCAs),
		minVersion:         t.TLS.MinVersion,
		family:             t.IPFamily,
		reuseConnections:   t.ReuseConnections,
		dnsServer:          t.DNSServer,
		clientCertificate:  string(t.TLS.ClientCertificate),
		clientKey:          t.TLS.ClientKey,
	}
	if len(t.EgressAllow) > 0 {
		k.egressAllow = fmt.Sprint(t.EgressAllow)
	}
	if t.Proxy != nil {
		k.proxyURL, k.proxyCredentials = t.Proxy.URL, proxyCredentialsHash(*t.Proxy)
	}
	return k
}

type pooledClient struct {
	client   *http.Client
	lastUsed time.Time
}

// transports holds one client per transportKey. Clients other than the
// default one are dropped (and their idle connections closed) when unused
// for longer than the idle connection timeout.
type transports struct {
	// newTransport builds the transport of a key; proxy is the key's
	// proxy (nil without), whose credentials the key does not keep. Its
	// CloseIdleConnections, if any, closes its idle connections.
	newTransport func(key transportKey, proxy *Proxy) (http.RoundTripper, error)
	idleTimeout  time.Duration

	mu        sync.Mutex
	clients   map[transportKey]*pooledClient
	lastSweep time.Time
}

// client returns the client for key, creating it when needed; proxy is
// the proxy of the target key was made of (see keyOf).
func (ts *transports) client(key transportKey, proxy *Proxy) (*http.Client, error) {
	now := time.Now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if now.Sub(ts.lastSweep) > ts.idleTimeout {
		ts.lastSweep = now
		for k, c := range ts.clients {
			if k != (transportKey{}) && now.Sub(c.lastUsed) > ts.idleTimeout {
				c.client.CloseIdleConnections()
				delete(ts.clients, k)
			}
		}
	}
	if c, ok := ts.clients[key]; ok {
		c.lastUsed = now
		return c.client, nil
	}
	t, err := ts.newTransport(key, proxy)
	if err != nil {
		return nil, err
	}
	c := &pooledClient{client: &http.Client{Transport: t, CheckRedirect: checkRedirect}, lastUsed: now}
	ts.clients[key] = c
	return c.client, nil
}

func (ts *transports) closeIdleConnections() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, c := range ts.clients {
		c.client.CloseIdleConnections()
	}
}

// tracedTransport is an http.Transport that reports the phases of a
// probe's requests to the probe's tracer, as httptrace hooks (see
// probeContext); other requests go as they are.
type tracedTransport struct{ *http.Transport }

func (t tracedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if pc := probeContextOf(req.Context()); pc != nil {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), pc.tracer.clientTrace()))
	}
	return t.Transport.RoundTrip(req)
}

// familyDialer restricts dial to the addresses of family: "tcp" becomes
// "tcp4" or "tcp6". A connection whose host its context pins to an
// address (withPinnedAddress) goes to that address.
func familyDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), family IPFamily) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var suffix string
	switch family {
	case IPFamilyIPv4:
		suffix = "4"
	case IPFamilyIPv6:
		suffix = "6"
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if network == "tcp" {
			network += suffix
		}
		return dial(ctx, network, pinnedDialAddress(ctx, addr))
	}
}

// NewResolver returns a resolver that sends every DNS query to server
// (host:port), over UDP or TCP as the Go resolver chooses, instead of the
// servers of /etc/resolv.conf (whose search domains and options still
// apply). An empty server returns nil, which means the system resolver.
// It backs the manager's --dns-server flag and lets tests use a loopback
// DNS server (see the probetest package).
func NewResolver(server string) *net.Resolver {
	if server == "" {
		return nil
	}
	return resolverAsking(server, nil)
}

// resolverAsking returns a resolver that sends every DNS query to server
// (host:port), each connection to it judged by control (the egress
// policy's ControlContext, given the lookup's context and so the probe's
// egress allowance); nil control judges nothing.
func resolverAsking(server string, control func(ctx context.Context, network, address string, c syscall.RawConn) error) *net.Resolver {
	return &net.Resolver{
		PreferGo: true, // only the Go resolver honours Dial
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			d := net.Dialer{ControlContext: control}
			return d.DialContext(ctx, network, server)
		},
	}
}
