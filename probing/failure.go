package probing

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/networkio/webchecker/probing/egress"
)

// failure classifies the error of an HTTP probe. ctx is the caller's
// context, probeCtx the one bounded by the target's timeout, u the
// target's URL, req the request that failed (after redirects, the last);
// answered tells whether the server had sent a byte of its answer to it
// (see closedByServer). The message starts with the method and the
// target's URL, as net/http's *url.Error names them: a redirect's URL is
// the server's choice, not named ("(after a redirect)" says that the
// failure is a redirect's).
func (p *HTTPProber) failure(ctx, probeCtx context.Context, t *builtTarget, u *url.URL, req *http.Request, answered bool, err error) Result {
	op, failedURL, cause := urlErrorOp(req.Method), redactURL(req.URL), err
	if ue, inner := unwrapURLError(err); ue != nil { // the client's own prefix names the failing URL
		op, failedURL, cause = ue.Op, ue.URL, inner
	}
	targetURL := redactURL(u)
	redirected := failedURL != targetURL
	prefix := op + " " + strconv.Quote(targetURL)
	if redirected {
		prefix = urlErrorOp(t.Method) + " " + strconv.Quote(targetURL) + " (after a redirect)"
	}
	prefix += ": "

	switch {
	case ctx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: prefix + "probe cancelled: " + ctx.Err().Error()}
	case probeCtx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: prefix + "timeout after " + t.Timeout.String()}
	}

	var redirectErr *tooManyRedirectsError
	if errors.As(err, &redirectErr) {
		return Result{Reason: ReasonTooManyRedirects, Message: urlErrorOp(t.Method) + " " + strconv.Quote(targetURL) + ": " + redirectErr.Error()}
	}
	reason := classify(err)
	if reason == ReasonConnectionFailed && !answered && closedByServer(err) {
		return Result{Reason: reason, Message: prefix + msgClosedBeforeAnswer}
	}
	scope := textScope{
		dnsServer:  p.opts.dnsServerOf(t),
		addr:       webHostPort(u),
		names:      append([]string{u.Hostname(), t.TLS.ServerName}, hostHeaders(t)...),
		redirected: redirected,
	}
	return withUnverifiedChain(Result{Reason: reason, Message: prefix + errorText(cause, scope)}, cause)
}

// hostHeaders returns the values of t's Host headers.
func hostHeaders(t *builtTarget) []string {
	var hosts []string
	for _, h := range t.Headers {
		if strings.EqualFold(h.Name, "Host") {
			host := h.Value.Reveal()
			if name, _, err := net.SplitHostPort(host); err == nil {
				host = name
			}
			hosts = append(hosts, host)
		}
	}
	return hosts
}

// msgClosedBeforeAnswer is the message of a connection that the server
// closed or reset before the first byte of its answer. Whether the client
// then sees the end of the stream, a reset on reading, a reset of its
// write or of its connect depends on timing alone (a server that closes
// with the client's request unread sends a reset; one that closes before
// the connect completed resets that), and a message that changed between
// identical probes would rewrite the status at every probe.
const msgClosedBeforeAnswer = "the server closed the connection before answering"

// closedByServer reports whether err is one of the ways a connection the
// server closed or reset shows: io.EOF, io.ErrUnexpectedEOF (in the middle
// of a TLS record), ECONNRESET, EPIPE, or one of net/http's errors for a
// connection that closed before a request could use it (which wrap
// nothing; see closedConnTexts).
func closedByServer(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	for _, e := range errorChain(err) {
		if slices.Contains(closedConnTexts, e.Error()) {
			return true
		}
	}
	return false
}

// closedConnTexts are the texts of net/http's unexported errors for a
// connection that closed before its first request could use it: an
// HTTP/1 connection whose server closed it while the request was being
// sent, an HTTP/2 one that closed between its handshake and its first
// request.
var closedConnTexts = []string{
	"http: server closed idle connection",
	"http2: client conn could not be established",
}

// classify returns the Reason of an error met while connecting to or
// talking with a server: ReasonEgressDenied, ReasonProxyFailed (the
// proxy's failures, see proxyError), ReasonDNSFailed, ReasonTLSError,
// ReasonTimeout or, for anything else, ReasonConnectionFailed.
func classify(err error) Reason {
	var (
		deniedErr *egress.DeniedError
		proxyErr  *proxyError
		dnsErr    *net.DNSError
		netErr    net.Error
	)
	switch {
	case errors.As(err, &deniedErr):
		return ReasonEgressDenied
	case errors.As(err, &proxyErr):
		return ReasonProxyFailed
	case errors.As(err, &dnsErr):
		return ReasonDNSFailed
	case isTLSError(err):
		return ReasonTLSError
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return ReasonTimeout
	default:
		return ReasonConnectionFailed
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

// errorChain returns err and every error it wraps, depth first (at most
// about a hundred).
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
