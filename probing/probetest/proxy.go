package probetest

import (
	"bufio"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// ProxyOptions configure a Proxy. The zero value is an open http proxy
// that reaches loopback IP addresses only.
type ProxyOptions struct {
	// Username and Password, when Username is not empty, are the basic
	// credentials every request must carry in Proxy-Authorization: other
	// requests get 407 Proxy Authentication Required.
	Username, Password string
	// RefuseConnect answers every (authorised) CONNECT with 403 Forbidden.
	RefuseConnect bool
	// DNSServer (host:port, see DNSServer) resolves the host names of the
	// targets; empty accepts IP addresses only (a name gets 502).
	DNSServer string
	// Certificate, when set, makes the proxy speak TLS with it: an
	// https:// proxy.
	Certificate *tls.Certificate
	// IP is the loopback address the proxy listens on; empty means
	// 127.0.0.1.
	IP string
}

// Proxy is an HTTP proxy for tests, listening on loopback. It tunnels
// CONNECT requests and forwards plain http requests in absolute form (one
// request per connection, answered with "Connection: close"). It connects
// to loopback addresses only (anything else gets 502 Bad Gateway, without
// a packet sent), counts the requests it reads and records the targets of
// CONNECT requests and the URLs of forwarded requests, refused ones
// included. A Proxy is safe for concurrent use.
type Proxy struct {
	opts     ProxyOptions
	ln       net.Listener
	url      string
	dialer   *net.Dialer
	forward  *http.Transport
	ctx      context.Context
	cancel   context.CancelFunc
	requests atomic.Int64
	conns    connSet // accepted connections and tunnels' upstream ones

	mu        sync.Mutex // guards connects and forwarded
	connects  []string
	forwarded []string

	closeOnce sync.Once
	closeErr  error
}

// NewProxy starts a Proxy on opts.IP (127.0.0.1 by default), which must
// be a loopback address. The caller must Close it.
func NewProxy(opts ProxyOptions) (*Proxy, error) {
	ip := opts.IP
	if ip == "" {
		ip = "127.0.0.1"
	}
	if addr, err := netip.ParseAddr(ip); err != nil || !addr.IsLoopback() {
		return nil, fmt.Errorf("probetest: proxy address %q is not a loopback address", ip)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("probetest: listen: %w", err)
	}
	scheme := "http"
	if opts.Certificate != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*opts.Certificate}})
		scheme = "https"
	}
	dialer := &net.Dialer{Control: loopbackOnly, Resolver: proxyResolver(opts.DNSServer)}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		opts:   opts,
		ln:     ln,
		url:    scheme + "://" + ln.Addr().String(),
		dialer: dialer,
		forward: &http.Transport{
			DialContext:        dialer.DialContext,
			DisableKeepAlives:  true,
			DisableCompression: true,
		},
		ctx:    ctx,
		cancel: cancel,
	}
	p.conns.serve(ln, p.serveConn)
	return p, nil
}

// NewTestProxy is NewProxy for tests: it fails the test if the proxy
// cannot start and closes it when the test ends.
func NewTestProxy(t testing.TB, opts ProxyOptions) *Proxy {
	t.Helper()
	p, err := NewProxy(opts)
	if err != nil {
		t.Fatalf("start proxy: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close proxy: %v", err)
		}
	})
	return p
}

// loopbackOnly is the dialer's Control: it refuses every address outside
// 127.0.0.0/8 and ::1 before a packet is sent.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("probetest: proxy refuses to connect to %s: not a loopback address", address)
	}
	return nil
}

// proxyResolver asks server only; without one it resolves nothing.
func proxyResolver(server string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			if server == "" {
				return nil, errors.New("probetest: proxy without a DNS server")
			}
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
}

// URL returns the proxy's URL: "http://127.0.0.1:port" (with its IP), or
// https with a Certificate.
func (p *Proxy) URL() string { return p.url }

// Addr returns the address the proxy listens on (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Requests returns the number of requests read so far, CONNECT and
// forwarded ones, refused ones included.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// ConnectTargets returns the targets (host:port) of the CONNECT requests
// read so far, in order, refused ones included.
func (p *Proxy) ConnectTargets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.connects...)
}

// ForwardedURLs returns the request targets of the other requests read so
// far (absolute URLs, as the clients sent them), in order, refused ones
// included.
func (p *Proxy) ForwardedURLs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.forwarded...)
}

// Close stops the listener, closes every connection (tunnels included) and
// waits for the proxy's goroutines to return. It is safe to call more than
// once; later calls return the first call's result.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.cancel()
		p.closeErr = p.conns.close(p.ln.Close)
		p.forward.CloseIdleConnections()
	})
	return p.closeErr
}

// serveConn answers the one request of c: a tunnel or a forwarded request
// (conns closes c when serveConn returns).
func (p *Proxy) serveConn(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.requests.Add(1)
	p.mu.Lock()
	if req.Method == http.MethodConnect {
		p.connects = append(p.connects, req.RequestURI)
	} else {
		p.forwarded = append(p.forwarded, req.RequestURI)
	}
	p.mu.Unlock()
	switch {
	case !p.authorized(req):
		writeStatus(c, http.StatusProxyAuthRequired, "Proxy-Authenticate: Basic realm=\"probetest\"\r\n")
	case req.Method == http.MethodConnect && p.opts.RefuseConnect:
		writeStatus(c, http.StatusForbidden, "")
	case req.Method == http.MethodConnect:
		p.tunnel(c, br, req.RequestURI)
	default:
		p.forwardRequest(c, req)
	}
}

// authorized reports whether req carries the credentials the proxy
// requires, if any.
func (p *Proxy) authorized(req *http.Request) bool {
	if p.opts.Username == "" {
		return true
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.opts.Username+":"+p.opts.Password))
	return subtle.ConstantTimeCompare([]byte(req.Header.Get("Proxy-Authorization")), []byte(want)) == 1
}

// writeStatus answers with code, extra headers (each ending in CRLF) and
// no body.
func writeStatus(c net.Conn, code int, extra string) {
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\n%sContent-Length: 0\r\nConnection: close\r\n\r\n", code, http.StatusText(code), extra)
}

// tunnel connects to target and copies bytes both ways (br first, which
// may hold bytes the client sent after its request) until both sides have
// closed their writing half, or the proxy closes.
func (p *Proxy) tunnel(c net.Conn, br *bufio.Reader, target string) {
	up, err := p.dialer.DialContext(p.ctx, "tcp", target)
	if err != nil {
		writeStatus(c, http.StatusBadGateway, "")
		return
	}
	if !p.conns.add(up) {
		return
	}
	defer p.conns.remove(up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(up, br)
		closeWrite(up)
	})
	_, _ = io.Copy(c, up)
	closeWrite(c)
	wg.Wait()
}

// closeWrite shuts down c's writing half, or closes c when it cannot.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// hopHeaders are the headers of one connection, not forwarded.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// forwardRequest sends req (in absolute form) to its server and copies
// the response back, closing the connection after it.
func (p *Proxy) forwardRequest(c net.Conn, req *http.Request) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		writeStatus(c, http.StatusBadRequest, "")
		return
	}
	out := req.Clone(p.ctx)
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if conn := req.Header.Get("Connection"); conn != "" {
		for _, h := range strings.Split(conn, ",") {
			out.Header.Del(strings.TrimSpace(h))
		}
	}
	resp, err := p.forward.RoundTrip(out)
	if err != nil {
		writeStatus(c, http.StatusBadGateway, "")
		return
	}
	defer resp.Body.Close()
	resp.Close = true
	_ = resp.Write(c)
}
