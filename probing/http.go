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
type HTTPProber struct {
	opts      HTTPProberOptions
	transport *http.Transport
	client    *http.Client
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
	// No transport-level timeouts: the per-probe context bounds every step
	// (resolution, dial, TLS handshake, headers, body).
	transport := &http.Transport{
		Proxy:               nil, // probes go direct, see HTTPProber
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        opts.MaxIdleConns,
		MaxIdleConnsPerHost: opts.MaxIdleConnsPerHost,
		IdleConnTimeout:     opts.IdleConnTimeout,
		DisableCompression:  true,
	}
	return &HTTPProber{
		opts:      opts,
		transport: transport,
		client: &http.Client{
			Transport:     transport,
			CheckRedirect: checkRedirect,
		},
		dnsServer: opts.DNSServer,
	}
}

// CloseIdleConnections closes the keep-alive connections that are not in
// use. Probing may continue afterwards.
func (p *HTTPProber) CloseIdleConnections() { p.transport.CloseIdleConnections() }

// followRedirectsKey is the request context key of a probe's redirect
// policy (a bool), read by checkRedirect: the client is shared by all
// probes, so the policy travels with the request.
type followRedirectsKey struct{}

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

	probeCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	probeCtx = context.WithValue(probeCtx, followRedirectsKey{}, t.FollowRedirects)
	req, err := http.NewRequestWithContext(probeCtx, method, t.URL, nil)
	if err != nil { // already validated; kept so that Probe cannot panic
		return Result{Reason: ReasonInvalidTarget, Message: fmt.Sprintf("invalid target: %v", err)}
	}
	req.Header.Set("User-Agent", p.opts.UserAgent)

	resp, err := p.client.Do(req)
	if err != nil {
		res := p.failure(ctx, probeCtx, t, req, err)
		if resp != nil { // CheckRedirect failed; the body is already closed
			res.StatusCode = resp.StatusCode
		}
		return res
	}
	_, err = io.CopyN(io.Discard, resp.Body, p.opts.BodyLimit)
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

	if !t.Accepts(resp.StatusCode) {
		return Result{
			Reason:     ReasonUnexpectedStatus,
			Message:    unexpectedStatusMessage(resp.StatusCode, t.ExpectedStatusCodes),
			StatusCode: resp.StatusCode,
		}
	}
	return Result{Success: true, Reason: ReasonSucceeded, Message: ReadyMessage, StatusCode: resp.StatusCode}
}

// validateTarget reports why a target cannot be probed. Its messages never
// contain the URL's password.
func validateTarget(rawURL, method string, timeout time.Duration) error {
	if method != http.MethodGet && method != http.MethodHead {
		return fmt.Errorf("invalid target: unsupported method %q (expected GET or HEAD)", method)
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
	switch {
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
	u.RawQuery, u.ForceQuery = ref.RawQuery, ref.ForceQuery
	return nil
}
