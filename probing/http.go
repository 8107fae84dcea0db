package probing

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/networkio/webchecker/probing/egress"
)

// Defaults of HTTPProberOptions.
const (
	DefaultBodyLimit           int64 = 64 << 10
	DefaultMaxIdleConns              = 256
	DefaultMaxIdleConnsPerHost       = 2
	DefaultIdleConnTimeout           = 90 * time.Second
	DefaultUserAgent                 = "webchecker"
)

// HTTPProberOptions configures an HTTPProber. The zero value is valid: every
// zero (or negative) field takes its default.
type HTTPProberOptions struct {
	// DNSServer is the DNS server (host:port) that host names of targets are
	// resolved with (see NewResolver). Empty means the system resolver.
	DNSServer string
	// BodyLimit is the number of response body bytes read at most; the rest
	// of the body is discarded by closing the connection. Default 64 KiB.
	BodyLimit int64
	// MaxIdleConns bounds the idle keep-alive connections kept across all
	// hosts. Default 256.
	MaxIdleConns int
	// MaxIdleConnsPerHost bounds the idle keep-alive connections kept per
	// host. Default 2.
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes keep-alive connections idle for longer.
	// Default 90s.
	IdleConnTimeout time.Duration
	// UserAgent is the User-Agent header of every probe request. Default
	// "webchecker".
	UserAgent string
	// Egress decides which addresses probes may connect to; it is checked
	// on every connection, after name resolution and on redirects. Nil
	// allows every address.
	Egress *egress.Policy
}

// withDefaults returns o with every unset field set to its default.
func (o HTTPProberOptions) withDefaults() HTTPProberOptions {
	if o.BodyLimit <= 0 {
		o.BodyLimit = DefaultBodyLimit
	}
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = DefaultMaxIdleConns
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = DefaultIdleConnTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	return o
}

// HTTPProber probes HTTP and HTTPS targets. All probes share one
// http.Transport, so that connections to the same server are kept alive
// and reused between probes. It is safe for concurrent use.
//
// Probes always connect directly to the target: proxy settings from the
// environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) are ignored, because a
// probe must check the target's reachability from here, not the proxy's.
// Response bodies are not decompressed (no Accept-Encoding is sent).
//
// Targets with different TLS settings or IP families get transports of
// their own (see transportKey), so that a connection set up for one target
// is never reused for another that would not accept it.
type HTTPProber struct {
	opts       HTTPProberOptions
	transports *transports
	// dnsServer is HTTPProberOptions.DNSServer: the server the resolver
	// really asks.
	dnsServer string
}

var _ Prober = (*HTTPProber)(nil)

// NewHTTPProber returns an HTTPProber configured by opts (see
// HTTPProberOptions for the defaults).
func NewHTTPProber(opts HTTPProberOptions) *HTTPProber {
	opts = opts.withDefaults()
	dialer := &net.Dialer{
		KeepAlive: 30 * time.Second,
		Resolver:  NewResolver(opts.DNSServer), // nil means net.DefaultResolver
	}
	if opts.Egress != nil {
		// Runs on the resolved address of every connection attempt.
		dialer.Control = opts.Egress.Control
	}
	newTransport := func(key transportKey) (*http.Transport, error) {
		tlsConfig, err := TLSOptions{
			InsecureSkipVerify: key.insecureSkipVerify,
			ServerName:         key.serverName,
			RootCAs:            []byte(key.rootCAs),
			MinVersion:         key.minVersion,
		}.tlsConfig()
		if err != nil {
			return nil, err
		}
		// No transport-level timeouts: the per-probe context bounds every
		// step (resolution, dial, TLS handshake, headers, body).
		return &http.Transport{
			Proxy:               nil, // probes go direct, see HTTPProber
			DialContext:         familyDialer(dialer.DialContext, key.family),
			TLSClientConfig:     tlsConfig,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        opts.MaxIdleConns,
			MaxIdleConnsPerHost: opts.MaxIdleConnsPerHost,
			IdleConnTimeout:     opts.IdleConnTimeout,
			DisableCompression:  true,
		}, nil
	}
	return &HTTPProber{
		opts: opts,
		transports: &transports{
			newTransport: newTransport,
			idleTimeout:  opts.IdleConnTimeout,
			clients:      map[transportKey]*pooledClient{},
		},
		dnsServer: opts.DNSServer,
	}
}

// CloseIdleConnections closes the keep-alive connections that are not in
// use. Probing may continue afterwards.
func (p *HTTPProber) CloseIdleConnections() { p.transports.closeIdleConnections() }

// followRedirectsKey is the request context key of a probe's redirect
// policy (a bool), read by checkRedirect: the client is shared by all
// probes, so the policy travels with the request.
type followRedirectsKey struct{}

// sensitiveHeadersKey is the request context key of the names of a probe's
// headers that came from Secrets ([]string), which checkRedirect drops on
// a redirect to another host (as net/http does with Authorization).
type sensitiveHeadersKey struct{}

// tooManyRedirectsError is returned by checkRedirect when MaxRedirects is
// reached. It keeps the absolute URL of the redirect not followed (the
// client's *url.Error only has the raw Location header).
type tooManyRedirectsError struct{ url *url.URL }

func (e *tooManyRedirectsError) Error() string {
	return fmt.Sprintf("stopped after %d redirects", MaxRedirects)
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if follow, _ := req.Context().Value(followRedirectsKey{}).(bool); !follow {
		return http.ErrUseLastResponse
	}
	if len(via) >= MaxRedirects {
		return &tooManyRedirectsError{url: req.URL}
	}
	if req.URL.Host != via[0].URL.Host {
		names, _ := req.Context().Value(sensitiveHeadersKey{}).([]string)
		for _, name := range names {
			req.Header.Del(name)
		}
	}
	return nil
}

// Probe requests t.URL with t.Method and judges the final status code with
// t.Accepts. t.Timeout bounds the whole exchange, including reading up to
// BodyLimit bytes of the response body; the rest of the body is not read.
//
// Probe never panics: a target that cannot be probed (bad URL, scheme,
// method or timeout) gives ReasonInvalidTarget. When ctx is cancelled or
// expires before t.Timeout (the caller gave up, rather than the probe
// timing out), the result has ReasonTimeout and a message that says the
// probe was cancelled; callers that cancel usually discard it anyway.
//
// Result.Phases has the duration of every phase the exchange went through
// (see PhaseTimings).
func (p *HTTPProber) Probe(ctx context.Context, t Target) Result {
	start := time.Now()
	tracer := newPhaseTracer()
	res := p.probe(httptrace.WithClientTrace(ctx, tracer.clientTrace()), t)
	res.Duration = time.Since(start)
	res.Phases = tracer.finish()
	return res
}

func (p *HTTPProber) probe(ctx context.Context, t Target) Result {
	method := t.Method
	if method == "" {
		method = http.MethodGet
	}
	if err := validateTarget(t.URL, method, t.Timeout); err != nil {
		return Result{Reason: ReasonInvalidTarget, Message: err.Error()}
	}
	if err := validFamily(t.IPFamily); err != nil {
		return Result{Reason: ReasonInvalidTarget, Message: err.Error()}
	}
	client, err := p.transports.client(keyOf(t))
	if err != nil {
		return Result{Reason: ReasonInvalidTarget, Message: fmt.Sprintf("invalid target: TLS settings: %v", err)}
	}

	probeCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	req, err := p.newRequest(probeCtx, method, t)
	if err != nil { // already validated; kept so that Probe cannot panic
		return Result{Reason: ReasonInvalidTarget, Message: fmt.Sprintf("invalid target: %v", err)}
	}

	resp, err := client.Do(req)
	if err != nil {
		res := p.failure(ctx, probeCtx, t, req, err)
		if resp != nil { // CheckRedirect failed; the body is already closed
			res.StatusCode = resp.StatusCode
		}
		return res
	}
	body, err := p.readBody(resp, t.BodyMatch)
	_ = resp.Body.Close() // an unread rest closes the connection
	if err != nil && !errors.Is(err, io.EOF) {
		err = &url.Error{
			Op:  urlErrorOp(resp.Request.Method),
			URL: redactURL(resp.Request.URL),
			Err: fmt.Errorf("read response body: %w", err),
		}
		res := p.failure(ctx, probeCtx, t, resp.Request, err)
		res.StatusCode = resp.StatusCode
		return res
	}

	res := judge(t, resp, body)
	res.StatusCode = resp.StatusCode
	return res
}

// newRequest builds the request of t: method, body, headers and
// credentials, with the redirect policy and the names of the headers from
// Secrets in its context (for checkRedirect).
func (p *HTTPProber) newRequest(ctx context.Context, method string, t Target) (*http.Request, error) {
	var sensitive []string
	for _, h := range t.Headers {
		if h.Sensitive {
			sensitive = append(sensitive, h.Name)
		}
	}
	if t.BasicAuth != nil || t.BearerToken != "" {
		// net/http keeps Authorization on a redirect to another port of
		// the same host; credentials from Secrets stay with their server.
		sensitive = append(sensitive, "Authorization")
	}
	ctx = context.WithValue(ctx, followRedirectsKey{}, t.FollowRedirects)
	ctx = context.WithValue(ctx, sensitiveHeadersKey{}, sensitive)
	var body io.Reader
	if t.Body != "" {
		body = strings.NewReader(t.Body) // replayed on 307/308 redirects
	}
	req, err := http.NewRequestWithContext(ctx, method, t.URL, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", p.opts.UserAgent)
	for _, h := range t.Headers {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value.Reveal()
			continue
		}
		req.Header.Set(h.Name, h.Value.Reveal())
	}
	switch {
	case t.BasicAuth != nil:
		req.SetBasicAuth(t.BasicAuth.Username.Reveal(), t.BasicAuth.Password.Reveal())
	case t.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+t.BearerToken.Reveal())
	}
	return req, nil
}

// readBody reads the response body up to its limit: the whole of what
// match searches when there is a match, otherwise BodyLimit bytes that are
// discarded (returning nil).
func (p *HTTPProber) readBody(resp *http.Response, match *BodyMatch) ([]byte, error) {
	if match == nil {
		_, err := io.CopyN(io.Discard, resp.Body, p.opts.BodyLimit)
		return nil, err
	}
	limit := match.MaxBytes
	if limit <= 0 {
		limit = p.opts.BodyLimit
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}

// judge turns a complete response into a Result: the status code first,
// then the body, then the expiry of the certificate chain.
func judge(t Target, resp *http.Response, body []byte) Result {
	var res Result
	var cert *x509.Certificate
	if resp.TLS != nil {
		if cert = earliestExpiry(resp.TLS.PeerCertificates); cert != nil {
			expiry := cert.NotAfter
			res.CertificateExpiry = &expiry
		}
	}
	switch {
	case !t.Accepts(resp.StatusCode):
		res.Reason, res.Message = ReasonUnexpectedStatus, unexpectedStatusMessage(resp.StatusCode, t.ExpectedStatusCodes)
	case t.BodyMatch != nil && t.BodyMatch.Regexp.Match(body) == t.BodyMatch.Invert:
		res.Reason, res.Message = ReasonBodyMismatch, bodyMismatchMessage(t.BodyMatch)
	default:
		if msg := certificateExpiring(cert, t.CertExpiryWarning, time.Now()); msg != "" {
			res.Reason, res.Message = ReasonCertificateExpiring, msg
			break
		}
		res.Success, res.Reason, res.Message = true, ReasonSucceeded, ReadyMessage
	}
	return res
}

// bodyMismatchMessage never quotes the body: it may hold anything,
// secrets included.
func bodyMismatchMessage(m *BodyMatch) string {
	if m.Invert {
		return fmt.Sprintf("response body matches %q, which it must not", m.Regexp.String())
	}
	return fmt.Sprintf("response body does not match %q", m.Regexp.String())
}

// validateTarget reports why a target cannot be probed. Its messages never
// contain the URL's password.
func validateTarget(rawURL, method string, timeout time.Duration) error {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodOptions:
	default:
		return fmt.Errorf("invalid target: unsupported method %q (expected GET, HEAD, POST, PUT or OPTIONS)", method)
	}
	if timeout <= 0 {
		return fmt.Errorf("invalid target: timeout %v is not positive", timeout)
	}
	if rawURL == "" {
		return errors.New("invalid target: empty URL")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // ue.Error() would repeat the URL, password included
		}
		return fmt.Errorf("invalid target URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("invalid target URL %q: unsupported scheme %q (expected http or https)", u.Redacted(), u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("invalid target URL %q: missing host", u.Redacted())
	}
	return nil
}

func unexpectedStatusMessage(code int, expected []int) string {
	if len(expected) == 0 {
		return fmt.Sprintf("unexpected status code %d (expected 2xx or 3xx)", code)
	}
	codes := make([]string, len(expected))
	for i, c := range expected {
		codes[i] = strconv.Itoa(c)
	}
	return fmt.Sprintf("unexpected status code %d (expected one of %s)", code, strings.Join(codes, ", "))
}

// failure classifies the error of a probe. ctx is the caller's context,
// probeCtx the one bounded by the target's timeout, req the request that
// failed (the last one after redirects).
func (p *HTTPProber) failure(ctx, probeCtx context.Context, t Target, req *http.Request, err error) Result {
	op, failedURL := urlErrorOp(req.Method), redactURL(req.URL)
	var ue *url.Error
	if errors.As(err, &ue) { // the client's own prefix names the failing URL
		op, failedURL = ue.Op, ue.URL
	}
	prefix := op + " " + strconv.Quote(failedURL)

	switch {
	case ctx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: prefix + ": probe cancelled: " + ctx.Err().Error()}
	case probeCtx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: prefix + ": timeout after " + t.Timeout.String()}
	}

	var redirectErr *tooManyRedirectsError
	if errors.As(err, &redirectErr) {
		return Result{
			Reason:  ReasonTooManyRedirects,
			Message: op + " " + strconv.Quote(redactURL(redirectErr.url)) + ": " + redirectErr.Error(),
		}
	}

	msg := p.errorMessage(err)
	var dnsErr *net.DNSError
	var netErr net.Error
	var deniedErr *egress.DeniedError
	switch {
	case errors.As(err, &deniedErr):
		return Result{Reason: ReasonEgressDenied, Message: msg}
	case errors.As(err, &dnsErr):
		return Result{Reason: ReasonDNSFailed, Message: msg}
	case isTLSError(err):
		return Result{Reason: ReasonTLSError, Message: msg}
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return Result{Reason: ReasonTimeout, Message: msg}
	default:
		return Result{Reason: ReasonConnectionFailed, Message: msg}
	}
}

// isTLSError reports whether err comes from the TLS handshake or from
// certificate verification.
func isTLSError(err error) bool {
	var (
		recordErr      tls.RecordHeaderError
		verifyErr      *tls.CertificateVerificationError
		alertErr       tls.AlertError
		echErr         *tls.ECHRejectionError
		unknownAuthErr x509.UnknownAuthorityError
		hostnameErr    x509.HostnameError
		invalidErr     x509.CertificateInvalidError
		rootsErr       x509.SystemRootsError
		opErr          *net.OpError
	)
	switch {
	case errors.Is(err, http.ErrSchemeMismatch), // HTTPS request to an HTTP server
		errors.As(err, &recordErr),
		errors.As(err, &verifyErr),
		errors.As(err, &alertErr),
		errors.As(err, &echErr),
		errors.As(err, &unknownAuthErr),
		errors.As(err, &hostnameErr),
		errors.As(err, &invalidErr),
		errors.As(err, &rootsErr):
		return true
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		return true // an alert sent by the server (crypto/tls's unexported alert type)
	}
	// Most other handshake errors are plain errors whose text starts with
	// "tls: " (for example "tls: handshake failure").
	for _, e := range errorChain(err) {
		if strings.HasPrefix(e.Error(), "tls: ") {
			return true
		}
	}
	return false
}

// errorChain returns err and every error it wraps, depth first.
func errorChain(err error) []error {
	var chain []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(chain) > 100 {
			return
		}
		chain = append(chain, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		}
	}
	walk(err)
	return chain
}

// Parts of error texts that vary between identical failures.
var (
	// The local end of a connection, an ephemeral port: "read tcp
	// 127.0.0.1:54321->127.0.0.1:8080: ..." becomes "read tcp
	// 127.0.0.1:8080: ...".
	localAddrRE = regexp.MustCompile(`(?:\[[0-9A-Fa-f:.]+(?:%[^\]\s]+)?\]|\d{1,3}(?:\.\d{1,3}){3}):\d+->`)
	// HTTP/2 stream numbers grow on a reused connection.
	streamIDRE = regexp.MustCompile(`stream ID \d+; `)
	// x509 expiry errors carry the current time.
	certTimeRE = regexp.MustCompile(`: current time \S+ is (?:after|before) \S+`)
)

// errorMessage returns the text of a transport error without the parts
// that change between identical failures, so that a failure that persists
// keeps the same Result message.
func (p *HTTPProber) errorMessage(err error) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		// Keep the quoted URL (it may legitimately contain anything) out of
		// the clean-up below.
		prefix := ue.Op + " " + strconv.Quote(ue.URL) + ": "
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			return prefix + p.cleanErrorText(ue.Err, rest)
		}
	}
	return p.cleanErrorText(err, msg)
}

func (p *HTTPProber) cleanErrorText(err error, msg string) string {
	var dnsErr *net.DNSError
	if p.dnsServer != "" && errors.As(err, &dnsErr) && dnsErr.Server != "" && dnsErr.Server != p.dnsServer {
		// The Go resolver names the server of /etc/resolv.conf it meant
		// to ask; NewResolver's Dial asked another one.
		fixed := *dnsErr
		fixed.Server = p.dnsServer
		msg = strings.Replace(msg, dnsErr.Error(), fixed.Error(), 1)
	}
	msg = localAddrRE.ReplaceAllString(msg, "")
	msg = streamIDRE.ReplaceAllString(msg, "")
	msg = certTimeRE.ReplaceAllString(msg, "")
	return msg
}

// redactURL returns u as net/http shows it in a *url.Error: with its
// password, if any, replaced by "***".
func redactURL(u *url.URL) string {
	if _, has := u.User.Password(); has {
		redacted := *u
		redacted.User = url.UserPassword(u.User.Username(), "***")
		return redacted.String()
	}
	return u.String()
}

// urlErrorOp is how net/http names a method in a *url.Error ("Get").
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
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
	return &net.Resolver{
		PreferGo: true, // only the Go resolver honours Dial
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
}

// BuildURL returns the absolute URL probed for a WebChecker's host and
// path.
//
// host is "http://name[:port]", "https://name[:port]" or a bare
// "name[:port]" (meaning http), optionally followed by "/"; name may be an
// IPv6 address in brackets ("[::1]:8080"). It must not carry credentials,
// another path, a query or a fragment. path must start with "/" and may
// carry a query; empty means "/".
//
// For example ("example.com:8080", "/healthz?full=1") gives
// "http://example.com:8080/healthz?full=1".
func BuildURL(host, path string) (string, error) {
	u, err := parseHost(host)
	if err != nil {
		return "", fmt.Errorf("build URL: invalid host %q: %w", host, err)
	}
	if err := setPath(u, path); err != nil {
		return "", fmt.Errorf("build URL: invalid path %q: %w", path, err)
	}
	return u.String(), nil
}

func parseHost(host string) (*url.URL, error) {
	if host == "" {
		return nil, errors.New("empty")
	}
	raw := host
	if !strings.Contains(host, "://") {
		raw = "http://" + host
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("unsupported scheme %q (expected http or https)", u.Scheme)
	case u.Opaque != "" || u.Hostname() == "":
		return nil, errors.New("missing host name")
	case u.User != nil:
		return nil, errors.New("credentials are not supported")
	case u.RawQuery != "" || u.ForceQuery:
		return nil, errors.New("a query belongs in the path")
	case u.Fragment != "" || strings.Contains(host, "#"):
		return nil, errors.New("fragments are not supported")
	case u.Path != "" && u.Path != "/":
		return nil, fmt.Errorf("unexpected path %q (the path is a separate field)", u.Path)
	case strings.HasSuffix(u.Host, ":"):
		return nil, errors.New("empty port")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("invalid port %q", port)
		}
	}
	return u, nil
}

func setPath(u *url.URL, path string) error {
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		return errors.New(`must start with "/"`)
	}
	if strings.HasPrefix(path, "//") {
		return errors.New(`must not start with "//"`)
	}
	if strings.Contains(path, "#") {
		return errors.New("fragments are not supported")
	}
	ref, err := url.Parse(path)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	}
	u.Path, u.RawPath = ref.Path, ref.RawPath
	u.RawQuery, u.ForceQuery = escapeQuery(ref.RawQuery), ref.ForceQuery
	return nil
}

// escapeQuery percent-encodes the bytes that url.Parse lets through in a
// query but that may not appear in a request line (spaces, control
// characters, non-ASCII bytes and "<>\^`{|}), which net/http would send as
// they are and servers refuse with 400. Everything else is kept as written.
func escapeQuery(q string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"<>\^`+"`{|}", c) >= 0 {
			if b.Len() == 0 {
				b.WriteString(q[:i])
			}
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return q
	}
	return b.String()
}
