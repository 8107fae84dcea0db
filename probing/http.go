package probing

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTPProber probes HTTP and HTTPS targets. It is safe for concurrent use.
//
// By default every probe goes through every step, as the blackbox exporter
// and curl do: it resolves the host name, connects, shakes hands (https)
// and sends its request on a connection of its own, closed after the
// probe. Keep-alive is off on that connection (HTTP/1.1 requests say
// "Connection: close"), so no connection outlives its probe and none is
// ever used by a second one. Targets with ReuseConnections instead share a
// keep-alive pool: a probe may send its request over a connection an
// earlier probe opened, and check nothing but the HTTP answer.
//
// Probes connect directly to the target unless it names a Proxy: proxy
// settings from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) are
// ignored, because a probe must check the target's reachability from
// here. Through a Target.Proxy, an http target's request is sent to the
// proxy in absolute form and an https target is tunnelled with CONNECT,
// with Proxy-Authorization (basic) when the proxy has credentials. The
// egress policy (and the IP family) then apply to the connection to the
// proxy, not to the target, which the proxy resolves and reaches: that is
// the proxy's job. The proxy's failures give ReasonProxyFailed: it cannot
// be reached, it refuses or fails a CONNECT, or it answers an http
// request with 407 (see proxyRefused; its other statuses cannot be told
// from the target's). Response bodies are not decompressed (no
// Accept-Encoding is sent).
//
// Targets with different TLS settings, IP families, ReuseConnections or
// proxies get transports of their own (see transportKey), so that a
// connection set up for one target is never reused for another that would
// not accept it.
type HTTPProber struct {
	opts       ProberOptions // with defaults
	transports *transports
	tokens     *tokens // of targets with OAuth2
}

var _ Prober = (*HTTPProber)(nil)

// NewHTTPProber returns an HTTPProber configured by opts (see
// ProberOptions for the defaults).
func NewHTTPProber(opts ProberOptions) *HTTPProber {
	opts = opts.withDefaults()
	fresh := newDialer(opts)
	keptAlive := withKeepAlive(fresh)
	newTransport := func(key transportKey, proxy *Proxy) (http.RoundTripper, error) {
		dialer := fresh
		if key.reuseConnections {
			dialer = keptAlive
		}
		dialer = resolvingWith(dialer, key.dnsServer)
		tlsConfig, err := TLSOptions{
			InsecureSkipVerify: key.insecureSkipVerify,
			ServerName:         key.serverName,
			RootCAs:            []byte(key.rootCAs),
			MinVersion:         key.minVersion,
			ClientCertificate:  []byte(key.clientCertificate),
			ClientKey:          key.clientKey,
		}.tlsConfig()
		if err != nil {
			return nil, fmt.Errorf("TLS settings: %w", err)
		}
		// No transport-level timeouts: the per-probe context bounds every
		// step (resolution, dial, TLS handshake, headers, body).
		tr := &http.Transport{
			Proxy:           nil, // probes go direct (or through setProxy), see HTTPProber
			DialContext:     familyDialer(dialer.DialContext, key.family),
			TLSClientConfig: tlsConfig,
			// Without keep-alive, no connection goes back to the idle
			// pool (HTTP/1.1) and an HTTP/2 connection takes one request
			// and closes: the next probe must dial.
			DisableKeepAlives:   !key.reuseConnections,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        opts.MaxIdleConns,
			MaxIdleConnsPerHost: opts.MaxIdleConnsPerHost,
			IdleConnTimeout:     opts.IdleConnTimeout,
			DisableCompression:  true,
			// A hostile target's headers are not kept: see
			// MaxResponseHeaderBytes (and BoundMessage for what errors
			// quote of them).
			MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		}
		if proxy != nil {
			if err := setProxy(tr, dialer, key.family, *proxy); err != nil {
				return nil, err
			}
			return tracedTransport{tr}, nil
		}
		// Plain HTTP goes without http.Transport's connection machinery
		// (see http1Transport).
		return newHTTP1Transport(tr, key.reuseConnections), nil
	}
	ts := &transports{
		newTransport: newTransport,
		idleTimeout:  opts.IdleConnTimeout,
		clients:      map[transportKey]*pooledClient{},
	}
	return &HTTPProber{opts: opts, transports: ts, tokens: newTokens(ts, opts.dnsServerOf)}
}

// CloseIdleConnections closes the keep-alive connections that are not in
// use. Probing may continue afterwards.
func (p *HTTPProber) CloseIdleConnections() { p.transports.closeIdleConnections() }

// Probe requests t's URL with its Method and judges the final status code
// with its ExpectedStatusCodes, then the body with its BodyMatch, then the
// certificate expiry. Its Timeout bounds the whole exchange, including
// reading up to BodyLimit (or BodyMatch.MaxBytes) bytes of the response
// body; the rest of the body is not read. t is neither parsed nor checked
// again: NewTarget did both.
//
// Probe never panics and never guesses: the zero Target, a target of
// another kind, or one whose transport cannot be built gives
// ReasonInvalidTarget. When ctx
// is cancelled or expires before t.Timeout (the caller gave up, rather than
// the probe timing out), the result has ReasonTimeout and a message that
// says the probe was cancelled; callers that cancel usually discard it
// anyway.
//
// Result.Phases has the duration of every phase the exchange went through
// (see PhaseTimings). Result.Message is bounded (see BoundMessage), and the
// response headers are read up to MaxResponseHeaderBytes.
func (p *HTTPProber) Probe(ctx context.Context, t Target) Result {
	start := time.Now()
	b, err := t.forProber("HTTP", KindHTTP)
	if err != nil {
		return finish(Result{Reason: ReasonInvalidTarget, Message: err.Error()}, start)
	}
	pc := &probeContext{followRedirects: b.FollowRedirects}
	pc.tracer.resolved.watch(b.url.Hostname(), b.Proxy != nil)
	res := finish(p.probe(ctx, b, pc, start), start)
	res.Phases = pc.tracer.finish()
	res.ResolvedAddresses = pc.tracer.resolved.addresses()
	return res
}

func (p *HTTPProber) probe(ctx context.Context, t *builtTarget, pc *probeContext, start time.Time) Result {
	client, err := p.transports.client(t.transport, t.Proxy)
	if err != nil {
		return Result{Reason: ReasonInvalidTarget, Message: fmt.Sprintf("invalid target: %v", err)}
	}

	probeCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	if t.OAuth2 != nil {
		var failed *Result
		if pc.token, failed = p.tokens.token(withEgressAllowance(probeCtx, t), t); failed != nil {
			return *failed
		}
	}
	req, err := p.newRequest(context.WithValue(withEgressAllowance(probeCtx, t), probeContextKey{}, pc), t, pc)
	if err != nil { // already validated; kept so that Probe cannot panic
		return Result{Reason: ReasonInvalidTarget, Message: fmt.Sprintf("invalid target: %v", err)}
	}
	u := req.URL

	resp, err := send(client, req)
	if err != nil {
		res := p.failure(ctx, probeCtx, t, u, req, pc.tracer.answered(), withoutProxyConnect(err))
		if resp != nil { // CheckRedirect failed; the body is already closed
			res.StatusCode = resp.StatusCode
		}
		return res
	}
	if t.OAuth2 != nil && resp.StatusCode == http.StatusUnauthorized {
		p.tokens.forget(t) // revoked or expired early: the next probe asks for another
	}
	if res, refused := proxyRefused(t, u, resp); refused {
		_ = resp.Body.Close()
		return res
	}
	body, err := p.readBody(resp, t.BodyMatch, t.Judge != nil && t.Judge.NeedsBody())
	_ = resp.Body.Close() // an unread rest closes the connection
	if err != nil && !errors.Is(err, io.EOF) {
		res := p.failure(ctx, probeCtx, t, u, resp.Request, true, fmt.Errorf("read response body: %w", err))
		res.StatusCode = resp.StatusCode
		res.FinalURL = finalURL(resp.Request.URL)
		return res
	}

	res := judge(probeCtx, t, resp, body)
	res.StatusCode = resp.StatusCode
	res.FinalURL = finalURL(resp.Request.URL)
	if res.Success && t.Judge != nil {
		answer := &Answer{
			Kind:    KindHTTP,
			Latency: time.Since(start),
			HTTP:    &HTTPAnswer{StatusCode: resp.StatusCode, Header: resp.Header, Body: body},
			TLS:     tlsAnswer(resp.TLS),
		}
		judgeAnswer(probeCtx, t.Judge, answer, &res)
	}
	return res
}

// newRequest builds the request of t with ctx: URL, method, body, headers
// and credentials. The names of the headers from
// Secrets go to pc, for checkRedirect (which drops Authorization, where
// the credentials go, by its name).
func (p *HTTPProber) newRequest(ctx context.Context, t *builtTarget, pc *probeContext) (*http.Request, error) {
	for _, h := range t.Headers {
		if h.Sensitive {
			pc.sensitiveHeaders = append(pc.sensitiveHeaders, h.Name)
		}
	}
	var body io.Reader
	if t.Body != "" {
		body = strings.NewReader(t.Body) // replayed on 307/308 redirects
	}
	// The URL is the one NewTarget parsed, not parsed again: the request
	// is built for an empty one, which then takes a copy of t's (the
	// probe's own, which nothing shares), and its host as NewRequest would
	// (NewTarget removed the colon of an empty port: "example.com:").
	req, err := http.NewRequestWithContext(ctx, t.Method, "", body)
	if err != nil {
		return nil, err
	}
	*req.URL = *t.url
	req.Host = req.URL.Host
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
	case pc.token != "":
		req.Header.Set("Authorization", "Bearer "+pc.token.Reveal())
	}
	return req, nil
}

// readBody reads the response body up to its limit: match.MaxBytes bytes
// when there is a match, otherwise BodyLimit bytes. It returns them when
// there is a match or keep is set (a Judge reads the body), otherwise
// discards them (returning nil).
func (p *HTTPProber) readBody(resp *http.Response, match *BodyMatch, keep bool) ([]byte, error) {
	limit := p.opts.BodyLimit
	if match != nil {
		limit, keep = match.MaxBytes, true
	}
	if !keep {
		_, err := io.CopyN(io.Discard, resp.Body, limit)
		return nil, err
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}

// judge turns a complete response into a Result: the status code first,
// then the body, then the expiry of the certificate chain (see
// expiringCertificate). The body match stops when ctx (the probe's) ends:
// a ReasonTimeout.
func judge(ctx context.Context, t *builtTarget, resp *http.Response, body []byte) Result {
	var res Result
	var cert *x509.Certificate
	if resp.TLS != nil {
		if cert = expiringCertificate(resp.TLS); cert != nil {
			expiry := cert.NotAfter
			res.CertificateExpiry = &expiry
		}
		setPresentedCertificate(&res, resp.TLS)
	}
	var matched bool
	var matchErr error
	if t.BodyMatch != nil && t.accepts(resp.StatusCode) {
		matched, matchErr = t.BodyMatch.Regexp.MatchContext(ctx, body)
	}
	switch {
	case !t.accepts(resp.StatusCode):
		res.Reason, res.Message = ReasonUnexpectedStatus, unexpectedStatusMessage(resp.StatusCode, t.ExpectedStatusCodes)
	case matchErr != nil:
		res.Reason, res.Message = ReasonTimeout, "timeout while matching the response body with bodyMatch"
	case t.BodyMatch != nil && matched == t.BodyMatch.Invert:
		res.Reason, res.Message = ReasonBodyMismatch, bodyMismatchMessage(t.BodyMatch)
	default:
		res.Success, res.Reason, res.Message = true, ReasonSucceeded, ReadyMessage
		res.CertificateWarning = BoundMessage(certificateExpiring(resp.TLS, cert, t.CertExpiryWarning, time.Now()))
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

// finalURL is u, the URL of a probe's final response, as Result.FinalURL
// keeps it: without user information, at most MaxFinalURLBytes.
func finalURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.User != nil {
		bare := *u
		bare.User = nil
		u = &bare
	}
	s := u.String()
	if len(s) > MaxFinalURLBytes {
		s = s[:MaxFinalURLBytes]
	}
	return s
}
