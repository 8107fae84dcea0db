package probing

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Probing through an HTTP proxy (Target.Proxy).
//
// Every connection of a probe with a proxy goes to the proxy: the dialer
// (newDialer) resolves the proxy's name and the egress policy judges the
// proxy's address, never the target's, which the proxy resolves and
// reaches on its own. A target whose address the policy denies is
// therefore reachable through an allowed proxy: reaching the target is the
// proxy's job, and the policy is about what the prober itself connects to.
//
// tcp, tls, grpc and grpcs probes (dialTarget), and https probes (see
// setProxy), ask the proxy for a tunnel with CONNECT (dialThroughProxy);
// the requests of http probes are sent to the proxy in absolute form by
// net/http. An https proxy URL makes the connection to the proxy itself
// TLS, verified against the system roots.

// maxConnectResponseBytes bounds the response to a CONNECT (status line and
// headers), as MaxResponseHeaderBytes bounds a target's.
const maxConnectResponseBytes = MaxResponseHeaderBytes

// proxyError is the failure of a connection through a Proxy: the proxy
// could not be reached (dial, or TLS handshake with an https proxy), it
// answered a CONNECT with another status than 2xx, or the CONNECT
// exchange itself failed. classify gives it ReasonProxyFailed, whatever
// the cause (a DNS or TLS error of the proxy too, so that the proxy's
// failures are told from the target's), but ReasonEgressDenied when the
// policy refused the proxy's address.
//
// Its text is stable (see stableErrorText) and names the proxy by its URL,
// which holds no credentials. It has no Unwrap: stableErrorText would name
// the target's address in the proxy's dial errors. Is and As look into the
// cause instead, so that errors.As still finds an *egress.DeniedError or a
// *net.DNSError in it.
type proxyError struct {
	proxy  string // the proxy's URL
	target string // what was asked of the proxy: the host:port of a CONNECT; "" when the proxy was not reached
	status int    // the status of a refused request, 0 otherwise
	err    error  // the cause, nil for a refused request
	text   string // the stable text of err
}

func (e *proxyError) Error() string {
	switch {
	case e.status != 0 && e.target == "":
		return fmt.Sprintf("proxy %q refused the request: %s", e.proxy, statusText(e.status))
	case e.status != 0:
		return fmt.Sprintf("proxy %q refused CONNECT to %q: %s", e.proxy, e.target, statusText(e.status))
	case e.target == "":
		return fmt.Sprintf("proxy %q unreachable: %s", e.proxy, e.text)
	}
	return fmt.Sprintf("proxy %q failed CONNECT to %q: %s", e.proxy, e.target, e.text)
}

// Is reports whether the cause is target (errors.Is).
func (e *proxyError) Is(target error) bool { return e.err != nil && errors.Is(e.err, target) }

// As finds target in the cause (errors.As).
func (e *proxyError) As(target any) bool { return e.err != nil && errors.As(e.err, target) }

// newProxyError returns the proxyError of cause, whose text names
// proxyAddr (the proxy's host:port as its URL writes it).
func newProxyError(p Proxy, proxyAddr, target string, cause error) *proxyError {
	text := errorText(cause, textScope{addr: proxyAddr, names: []string{proxyHost(p)}})
	switch {
	case errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrUnexpectedEOF):
		text = "the proxy closed the connection"
	case errors.Is(cause, errConnectResponseTooLarge):
		text = cause.Error()
	}
	return &proxyError{proxy: p.URL, target: target, err: cause, text: text}
}

// statusText returns "407 Proxy Authentication Required": the code and its
// standard text, never the proxy's own reason phrase.
func statusText(code int) string {
	if text := http.StatusText(code); text != "" {
		return strconv.Itoa(code) + " " + text
	}
	return strconv.Itoa(code)
}

var errConnectResponseTooLarge = fmt.Errorf("CONNECT response header larger than %d bytes", maxConnectResponseBytes)

// proxyAuthorization returns the Proxy-Authorization header of p, "" when
// p has no credentials.
func proxyAuthorization(p Proxy) string {
	if p.Username == "" {
		return ""
	}
	creds := p.Username.Reveal() + ":" + p.Password.Reveal()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(creds))
}

// proxyCredentialsHash identifies p's credentials in a transportKey
// without keeping them: zero without credentials.
func proxyCredentialsHash(p Proxy) [sha256.Size]byte {
	if p.Username == "" {
		return [sha256.Size]byte{}
	}
	user, pass := p.Username.Reveal(), p.Password.Reveal()
	return sha256.Sum256([]byte(strconv.Itoa(len(user)) + ":" + user + pass))
}

// dialProxy connects to p over TCP with d, restricted to the addresses of
// family, and shakes hands with it when its URL is https (with tlsConf,
// whose ServerName defaults to the proxy's host name; nil verifies
// against the system roots).
func dialProxy(ctx context.Context, d *net.Dialer, family IPFamily, p Proxy, tlsConf *tls.Config) (net.Conn, string, error) {
	u, err := parseURL(p.URL)
	if err != nil { // validated before; kept so that a probe cannot panic
		return nil, "", &proxyError{proxy: p.URL, err: err, text: err.Error()}
	}
	addr := webHostPort(u)
	conn, err := dialTCP(ctx, d, family, addr)
	if err != nil {
		return nil, addr, newProxyError(p, addr, "", err)
	}
	if u.Scheme != "https" {
		return conn, addr, nil
	}
	cfg := tlsConf.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, addr, newProxyError(p, addr, "", err)
	}
	return tc, addr, nil
}

// dialThroughProxy connects to target (host:port) through a tunnel that p
// opens with CONNECT: see dialProxy for the connection to p, and
// connectTunnel for the tunnel.
func dialThroughProxy(ctx context.Context, d *net.Dialer, family IPFamily, p Proxy, tlsConf *tls.Config, target string) (net.Conn, error) {
	conn, addr, err := dialProxy(ctx, d, family, p, tlsConf)
	if err != nil {
		return nil, err
	}
	tunnel, err := connectTunnel(ctx, conn, p, target)
	if err != nil {
		_ = conn.Close()
		var pe *proxyError
		if !errors.As(err, &pe) {
			err = newProxyError(p, addr, target, err)
		}
		return nil, err
	}
	return tunnel, nil
}

// connectTunnel sends `CONNECT target HTTP/1.1` on conn (with p's
// credentials) and reads the answer, within ctx: a 2xx answer returns the
// tunnel, with the bytes the proxy sent after its answer's header (the
// target's first bytes) kept in front of the connection's; another status
// returns a proxyError with that status.
func connectTunnel(ctx context.Context, conn net.Conn, p Proxy, target string) (net.Conn, error) {
	if strings.ContainsFunc(target, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, fmt.Errorf("invalid CONNECT target %q", target)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	// Cancelling ctx interrupts the exchange by expiring the deadline.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if auth := proxyAuthorization(p); auth != "" {
		req += "Proxy-Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return nil, contextError(ctx, fmt.Errorf("write CONNECT: %w", err))
	}
	status, rest, err := readConnectResponse(conn)
	if err != nil {
		return nil, contextError(ctx, err)
	}
	if !stop() { // ctx is done and the deadline spoilt
		return nil, ctx.Err()
	}
	if status < 200 || status > 299 {
		return nil, &proxyError{proxy: p.URL, target: target, status: status}
	}
	_ = conn.SetDeadline(time.Time{})
	if len(rest) == 0 {
		return conn, nil
	}
	return &tunnelConn{Conn: conn, pending: rest}, nil
}

// contextError returns ctx's error when ctx is done or err is the expiry
// of the connection's deadline, which is ctx's, err otherwise.
func contextError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if _, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return err
}

// connectRequest is what readConnectResponse tells http.ReadResponse the
// response answers.
var connectRequest = &http.Request{Method: http.MethodConnect}

// readConnectResponse reads the response to a CONNECT from r, at most
// maxConnectResponseBytes of it, skipping informational (1xx) responses.
// It returns the final status and the bytes read after its header (the
// start of the tunnel, for a 2xx). It reads no body: after a 2xx there is
// none (the tunnel starts), and after another status the connection is
// closed.
func readConnectResponse(r io.Reader) (status int, rest []byte, err error) {
	lr := &io.LimitedReader{R: r, N: maxConnectResponseBytes}
	br := bufio.NewReader(lr)
	for {
		resp, err := http.ReadResponse(br, connectRequest)
		switch {
		case err != nil && lr.N <= 0:
			return 0, nil, errConnectResponseTooLarge
		case err != nil:
			return 0, nil, fmt.Errorf("read CONNECT response: %w", err)
		case resp.StatusCode < 100:
			return 0, nil, fmt.Errorf("read CONNECT response: invalid status code %03d", resp.StatusCode)
		case resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols:
			continue
		}
		if n := br.Buffered(); n > 0 {
			peeked, _ := br.Peek(n) // cannot fail: the bytes are buffered
			rest = append([]byte(nil), peeked...)
		}
		return resp.StatusCode, rest, nil
	}
}

// tunnelConn is a tunnel whose first bytes were read with the proxy's
// answer: Read returns them first.
type tunnelConn struct {
	net.Conn
	pending []byte
}

func (c *tunnelConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// CloseWrite shuts down the writing side of the connection to the proxy
// when it can (TCP, TLS), and closes it otherwise.
func (c *tunnelConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// setProxy makes tr, a transport of the HTTP prober, go through p (see
// HTTPProber): http requests go to p in absolute form (net/http adds
// Proxy-Authorization from the URL's user info), and https connections
// are tunnelled with CONNECT by dialThroughProxy, after which tr shakes
// hands with the target over the tunnel with its TLSClientConfig (and
// traces the handshake). net/http could send the CONNECT itself, but
// would then shake hands with an https proxy with the target's TLS
// settings, and its errors would not tell a failed CONNECT from the
// target's failures.
func setProxy(tr *http.Transport, d *net.Dialer, family IPFamily, p Proxy) error {
	u, err := parseURL(p.URL)
	if err != nil {
		return fmt.Errorf("proxy URL: %w", err)
	}
	// http, even for an https proxy: DialContext shakes hands with it.
	forHTTP := &url.URL{Scheme: "http", Host: webHostPort(u)}
	if p.Username != "" {
		forHTTP.User = url.UserPassword(p.Username.Reveal(), p.Password.Reveal())
	}
	tr.Proxy = func(req *http.Request) (*url.URL, error) {
		if req.URL.Scheme == "http" {
			return forHTTP, nil
		}
		return nil, nil // https: DialTLSContext tunnels
	}
	// Only ever asked for the proxy: https goes through DialTLSContext.
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		conn, _, err := dialProxy(ctx, d, family, p, nil)
		return conn, err
	}
	tr.DialTLSContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		conn, err := dialThroughProxy(ctx, d, family, p, nil, addr)
		if err != nil {
			return nil, err
		}
		cfg := tr.TLSClientConfig.Clone() // with NextProtos, once tr has been used
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		return tls.Client(conn, cfg), nil // tr shakes hands
	}
	return nil
}

// withoutProxyConnect removes from err (a client's error) the
// "proxyconnect tcp: " that net/http puts around the errors of dialing
// the proxy of an http request, when what it wraps is a proxyError, which
// says it already.
func withoutProxyConnect(err error) error {
	ue, cause := unwrapURLError(err)
	var op *net.OpError
	if ue == nil || !errors.As(cause, &op) || op.Op != "proxyconnect" {
		return err
	}
	pe, ok := op.Err.(*proxyError)
	if !ok {
		return err
	}
	unwrapped := *ue
	unwrapped.Err = pe
	return &unwrapped
}

// proxyRefused returns the failure of a probe whose plain http request the
// proxy answered with 407 Proxy Authentication Required, and false for
// any other response. A 407 through a proxy is taken to be the proxy's:
// net/http cannot tell it from the target's, but RFC 9110 reserves it for
// proxies, and an origin server has no reason to send it. Other statuses
// of a proxy in front of an http target (403 for a target it does not
// allow, 502 for one it cannot reach) cannot be told from the target's,
// and are judged as the target's.
func proxyRefused(t *builtTarget, u *url.URL, resp *http.Response) (Result, bool) {
	if t.Proxy == nil || resp.StatusCode != http.StatusProxyAuthRequired || resp.Request.URL.Scheme != "http" {
		return Result{}, false
	}
	err := &proxyError{proxy: t.Proxy.URL, status: resp.StatusCode}
	return Result{
		Reason:     ReasonProxyFailed,
		Message:    urlErrorOp(t.Method) + " " + strconv.Quote(redactURL(u)) + ": " + err.Error(),
		StatusCode: resp.StatusCode,
	}, true
}

// proxyHost returns the host name of p's URL, "" when it does not parse.
func proxyHost(p Proxy) string {
	u, err := parseURL(p.URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
