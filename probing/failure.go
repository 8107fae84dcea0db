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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/networkio/webchecker/probing/egress"
)

// failure classifies the error of an HTTP probe. ctx is the caller's
// context, probeCtx the one bounded by the target's timeout, req the request
// that failed; answered tells whether the server had sent a byte of its
// answer to it (see closedByServer). The message starts with the method
// and URL that failed, as net/http's *url.Error names them: after
// redirects, the last URL.
func (p *HTTPProber) failure(ctx, probeCtx context.Context, t Target, req *http.Request, answered bool, err error) Result {
	op, failedURL, cause := urlErrorOp(req.Method), redactURL(req.URL), err
	if ue, inner := unwrapURLError(err); ue != nil { // the client's own prefix names the failing URL
		op, failedURL, cause = ue.Op, ue.URL, inner
	}
	prefix := op + " " + strconv.Quote(failedURL) + ": "

	switch {
	case ctx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: prefix + "probe cancelled: " + ctx.Err().Error()}
	case probeCtx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: prefix + "timeout after " + t.Timeout.String()}
	}

	var redirectErr *tooManyRedirectsError
	if errors.As(err, &redirectErr) {
		return Result{
			Reason:  ReasonTooManyRedirects,
			Message: op + " " + strconv.Quote(redactURL(redirectErr.url)) + ": " + redirectErr.Error(),
		}
	}
	reason := classify(err)
	if reason == ReasonConnectionFailed && !answered && closedByServer(err) {
		return Result{Reason: reason, Message: prefix + msgClosedBeforeAnswer}
	}
	return Result{Reason: reason, Message: prefix + stableErrorText(cause, p.opts.DNSServer, targetAddr(failedURL))}
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

// targetAddr returns the host and port of rawURL as written, with the
// scheme's default port when it names none: "example.com:443" for
// "https://example.com/". It returns "" when rawURL does not parse.
func targetAddr(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	return webHostPort(u)
}

// namedAddr is a net.Addr that is a host name and port, not an address.
type namedAddr struct{ network, hostPort string }

func (a namedAddr) Network() string { return a.network }
func (a namedAddr) String() string  { return a.hostPort }

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

// brokenConnection is what net/http puts before the error of an HTTP/1
// connection that broke when the request had been partly written, and
// not when it had not been: timing.
const brokenConnection = "net/http: HTTP/1.x transport connection broken: "

// stableErrorText returns the text of err without the parts that change
// between identical failures, so that a failure that persists keeps the
// same Result message. dnsServer is the server the resolver really asks
// (see NewResolver); empty for the system resolver. addr is the host:port
// of the URL that failed (see targetAddr), which network errors name
// instead of the address the name resolved to: a name with several
// addresses in rotating order (round-robin DNS) would otherwise change
// the message at every probe. Empty keeps the resolved address.
func stableErrorText(err error, dnsServer, addr string) string {
	msg := err.Error()
	if addr != "" {
		for _, e := range errorChain(err) {
			// "dial tcp 192.0.2.1:443: connect: connection refused"
			// becomes "dial tcp example.com:443: ...", and the local end
			// of "read tcp 192.0.2.7:54321->192.0.2.1:443" goes too.
			if opErr, ok := e.(*net.OpError); ok && opErr.Addr != nil {
				named := *opErr
				named.Source, named.Addr = nil, namedAddr{network: opErr.Addr.Network(), hostPort: addr}
				msg = strings.Replace(msg, opErr.Error(), named.Error(), 1)
			}
		}
	}
	var dnsErr *net.DNSError
	if dnsServer != "" && errors.As(err, &dnsErr) && dnsErr.Server != "" && dnsErr.Server != dnsServer {
		// The Go resolver names the server of /etc/resolv.conf it meant
		// to ask; NewResolver's Dial asked another one.
		fixed := *dnsErr
		fixed.Server = dnsServer
		msg = strings.Replace(msg, dnsErr.Error(), fixed.Error(), 1)
	}
	msg = strings.Replace(msg, brokenConnection, "", 1)
	msg = localAddrRE.ReplaceAllString(msg, "")
	msg = streamIDRE.ReplaceAllString(msg, "")
	msg = certTimeRE.ReplaceAllString(msg, "")
	return msg
}
