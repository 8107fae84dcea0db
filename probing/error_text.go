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
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/networkio/webchecker/probing/egress"
)

// textScope is what errorText may name of a probe besides fixed texts:
// what the user wrote, and the resolver the prober really asks.
type textScope struct {
	// dnsServer is the server the resolver really asks (see
	// NewResolver); empty for the system resolver.
	dnsServer string
	// addr is the host:port network errors name instead of the address
	// they dialled (see targetAddr): the target's, as written. A name
	// with several addresses in rotating order (round-robin DNS) would
	// otherwise change the message at every probe. Empty keeps the
	// dialled address; see also redirected.
	addr string
	// names are the host names the user wrote (the target's host, a TLS
	// server name, a Host header): the only names a DNS or certificate
	// error may quote.
	names []string
	// redirected tells that the failure is a redirect's: the address a
	// network error names is then the redirect's, chosen by the server,
	// and not named.
	redirected bool
}

// msgWithheld stands for the text of an error errorText does not know:
// it may quote what the server sent, so it is not shown.
const msgWithheld = "the exchange with the server failed (the error's own text is not shown: it may quote what the server sent)"

// msgRedirectAddr names the address of a redirect's failed connection.
const msgRedirectAddr = "(a redirect's address)"

// errorText returns the text of err built from fixed texts only, never
// from bytes a server sent (its status line, headers, body, reply,
// certificate names, DNS records, HTTP/2 GOAWAY debug data, a proxy's
// answer): errors of Go's net/http, crypto/tls, crypto/x509 and
// x/net/http2 quote them. The errors it knows (network and system call
// errors, DNS and certificate errors, this package's own) keep their
// sense in fixed words, the names and addresses the user wrote (see
// textScope) and numbers; an error it does not know becomes msgWithheld.
// The text is also stable: no ephemeral port, no resolved address of
// the target's name, no current time (a certificate's validity is counted
// in whole days), no HTTP/2 stream number, so that a failure that
// persists keeps the same Result message (for a day at least).
func errorText(err error, s textScope) string {
	return s.text(err, 0)
}

func (s textScope) text(err error, depth int) string {
	if err == nil {
		return ""
	}
	if depth > 32 {
		return msgWithheld
	}
	switch e := err.(type) {
	case fixedError:
		return string(e)
	case *egress.DeniedError: // the policy's own words: the address and the rule
		return e.Error()
	case *proxyError: // built from fixed texts (see newProxyError)
		named := *e
		if s.redirected && e.target != "" { // a redirect's host:port, the server's choice
			named.target = msgRedirectAddr
		}
		var dnsErr *net.DNSError
		if s.dnsServer != "" && errors.As(e.err, &dnsErr) && dnsErr.Server != "" {
			// The proxy's name was looked up by the prober's resolver (see
			// dnsText).
			named.text = strings.Replace(named.text, " on "+dnsErr.Server+":", " on "+s.dnsServer+":", 1)
		}
		return named.Error()
	case *tooManyRedirectsError:
		return e.Error()
	case *handshakeError:
		return "TLS handshake: " + s.text(e.err, depth+1)
	case *url.Error:
		return s.text(e.Err, depth+1)
	case *net.OpError:
		return s.opText(e, depth)
	case *os.SyscallError:
		return e.Syscall + ": " + s.text(e.Err, depth+1)
	case syscall.Errno: // the kernel's table
		return e.Error()
	case *net.DNSError:
		return s.dnsText(e)
	case *net.AddrError:
		return "address: " + e.Err
	case *tls.CertificateVerificationError:
		return "tls: failed to verify certificate: " + s.verificationText(e, depth, time.Now())
	}
	if text, ok := s.certText(err); ok {
		return text
	}
	for _, sentinel := range sentinelErrors {
		if err == sentinel { //nolint:errorlint // the sentinel itself, not what wraps it
			return err.Error()
		}
	}
	text := err.Error()
	if known, ok := knownText(text); ok {
		return known
	}
	// A wrapper: its own words (before the wrapped error's) are kept only
	// when they are known ones; the wrapped error is judged on its own.
	if inner := errors.Unwrap(err); inner != nil {
		prefix, wraps := strings.CutSuffix(text, inner.Error())
		if wraps && keptPrefix(prefix) {
			return prefix + s.text(inner, depth+1)
		}
		return s.text(inner, depth+1)
	}
	return msgWithheld
}

// certText is the text of the TLS and X.509 errors that name what a
// certificate or a server chose only in their fields, and whether err is
// one of them.
func (s textScope) certText(err error) (string, bool) {
	switch e := err.(type) {
	case x509.UnknownAuthorityError: // its text names a candidate issuer
		return "x509: certificate signed by unknown authority", true
	case x509.HostnameError: // its text lists the certificate's names
		return "x509: certificate is not valid for " + strconv.Quote(s.name(e.Host, "the name asked for")), true
	case x509.CertificateInvalidError:
		if text, ok := invalidCertTexts[e.Reason]; ok {
			return text, true
		}
		return "x509: certificate is not valid", true
	case x509.SystemRootsError:
		return "x509: failed to load system roots", true
	case x509.UnhandledCriticalExtension, x509.ConstraintViolationError, x509.InsecureAlgorithmError:
		return e.Error(), true // fixed texts, or the name of an algorithm
	case tls.RecordHeaderError: // the record's bytes are in its fields, not its text
		return "tls: " + e.Msg, true
	case tls.AlertError: // the alert's name (a fixed table) or number
		return e.Error(), true
	case *tls.ECHRejectionError:
		return "tls: server rejected ECH", true
	}
	return "", false
}

// opText is the text of a network error: its operation, network and
// address (the scope's address instead of the dialled one, no local
// address), then its cause's text.
func (s textScope) opText(e *net.OpError, depth int) string {
	text := e.Op
	if e.Net != "" {
		text += " " + e.Net
	}
	if e.Addr != nil {
		switch {
		case s.redirected:
			text += " " + msgRedirectAddr
		case s.addr != "":
			text += " " + s.addr
		default:
			text += " " + e.Addr.String()
		}
	}
	return text + ": " + s.text(e.Err, depth+1)
}

// dnsText is the text of a failed lookup: the name (when the user wrote
// it: a redirect's is the server's), the server asked and the resolver's
// own words, which are fixed.
func (s textScope) dnsText(e *net.DNSError) string {
	text := "lookup " + s.name(e.Name, "of a redirect's host")
	if server := e.Server; server != "" {
		if s.dnsServer != "" {
			// The Go resolver names the server of /etc/resolv.conf it
			// meant to ask; NewResolver's Dial asked another one.
			server = s.dnsServer
		}
		text += " on " + server
	}
	return text + ": " + e.Err
}

// name returns name when the user wrote it (see textScope.names), else
// instead.
func (s textScope) name(name, instead string) string {
	for _, n := range s.names {
		if n != "" && strings.EqualFold(strings.TrimSuffix(n, "."), strings.TrimSuffix(name, ".")) {
			return name
		}
	}
	return instead
}

// fixedError is an error of this package whose text is fixed: built from
// constant words, numbers and what the user wrote, never from what a
// server sent. errorText shows it as it is.
type fixedError string

func (e fixedError) Error() string { return string(e) }

// invalidCertTexts are the texts of x509.CertificateInvalidError by
// reason, without the names and times the library's texts hold.
var invalidCertTexts = map[x509.InvalidReason]string{
	x509.NotAuthorizedToSign:           "x509: a certificate of the chain is not authorized to sign other certificates",
	x509.Expired:                       "x509: certificate has expired or is not yet valid",
	x509.CANotAuthorizedForThisName:    "x509: a root or intermediate certificate is not authorized to sign for this name",
	x509.TooManyIntermediates:          "x509: too many intermediates for path length constraint",
	x509.IncompatibleUsage:             "x509: certificate specifies an incompatible key usage",
	x509.NameMismatch:                  "x509: issuer name does not match subject from issuing certificate",
	x509.NameConstraintsWithoutSANs:    "x509: issuer has name constraints but leaf doesn't have a SAN extension",
	x509.UnconstrainedName:             "x509: issuer has name constraints but leaf contains unknown or unconstrained name",
	x509.TooManyConstraints:            "x509: too many name constraints to check",
	x509.CANotAuthorizedForExtKeyUsage: "x509: a certificate of the chain is not authorized for an extended key usage",
	x509.NoValidChains:                 "x509: no valid chains built",
}

// sentinelErrors are errors whose texts are fixed, shown as they are.
var sentinelErrors = []error{
	io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe, context.DeadlineExceeded, context.Canceled,
	os.ErrDeadlineExceeded, net.ErrClosed, http.ErrSchemeMismatch, http.ErrBodyReadAfterClose,
	errConnectResponseTooLarge, errHeaderLimit, errNoH2,
}

// Texts of errors of net/http and x/net/http2 that are not exported as
// values. Fixed ones are shown as they are; the others by their pattern,
// as a fixed text (or with the numbers and codes they hold).
var (
	fixedTexts = []string{
		"http: server closed idle connection",
		"http2: client conn could not be established",
		"http2: client connection lost",
		"http2: client connection force closed via ClientConn.Close",
		"http2: server sent GOAWAY and closed the connection",
		"http2: response body closed",
		"net/http: request canceled",
		"net/http: request canceled while waiting for connection",
		"net/http: timeout awaiting response headers",
		"net/http: TLS handshake timeout",
		"malformed chunked encoding",
		"invalid byte in chunk length",
		"http chunk length too large",
		"http: unexpected EOF reading trailer",
		"the server closed the connection without responding",
	}
	textPatterns = []struct {
		re   *regexp.Regexp
		text string // the replacement (regexp.Expand), "" to keep the match
	}{
		{re: regexp.MustCompile(`^net/http: server response headers exceeded \d+ bytes; aborted$`)},
		{re: regexp.MustCompile(`^read CONNECT response: invalid status code \d+$`)},
		// net/http's check of the request's headers, which the user wrote.
		{re: regexp.MustCompile(`^net/http: invalid header field (?:name|value) for "[^"]*"$`)},
		{regexp.MustCompile(`^malformed HTTP (?:response|version|status code)`), "malformed HTTP status line"},
		{regexp.MustCompile(`^(?:malformed MIME header|invalid header field|malformed continuation line|net/textproto:)`), "malformed HTTP header line"},
		{regexp.MustCompile(`^(?:bad|invalid|http: message cannot contain multiple) Content-Length`), "malformed Content-Length header"},
		{regexp.MustCompile(`^(?:unsupported transfer encoding|too many transfer encodings)`), "unsupported Transfer-Encoding header"},
		{regexp.MustCompile(`^failed to parse Location header`), "malformed Location header in a redirect"},
		{regexp.MustCompile(`^unsupported protocol scheme`), "a redirect to an unsupported URL scheme"},
		{regexp.MustCompile(`^http2: server sent GOAWAY and closed the connection; LastStreamID=\d+, ErrCode=([A-Z_0-9]+|unknown error code 0x[0-9a-f]+)`), "http2: server sent GOAWAY and closed the connection; ErrCode=$1"},
		{regexp.MustCompile(`^http2: Transport received GOAWAY from server ErrCode:([A-Z_0-9]+|unknown error code 0x[0-9a-f]+)$`), "http2: server sent GOAWAY: ErrCode=$1"},
		{regexp.MustCompile(`^stream error: stream ID \d+; ([A-Z_0-9]+|unknown error code 0x[0-9a-f]+)`), "http2: stream error: $1"},
		{regexp.MustCompile(`^connection error: ([A-Z_0-9]+|unknown error code 0x[0-9a-f]+)$`), "http2: connection error: $1"},
		{regexp.MustCompile(`^http2: `), "malformed HTTP/2 response"},
	}
)

// knownText returns the fixed text for the text of an error of net/http
// or x/net/http2 (see fixedTexts and textPatterns), or a text of
// crypto/tls or crypto/x509 that quotes nothing (their texts quote
// certificate names and parse errors of certificate fields in double
// quotes; the others hold fixed words, numbers and algorithm names).
func knownText(text string) (string, bool) {
	if slices.Contains(fixedTexts, text) {
		return text, true
	}
	for _, p := range textPatterns {
		m := p.re.FindStringSubmatchIndex(text)
		switch {
		case m == nil:
			continue
		case p.text == "":
			return text[m[0]:m[1]], true
		}
		return string(p.re.ExpandString(nil, p.text, text, m)), true
	}
	for _, lib := range []string{"tls: ", "x509: "} {
		if strings.HasPrefix(text, lib) {
			if strings.ContainsAny(text, "\"`") {
				return lib + "handshake failed", true
			}
			return text, true
		}
	}
	return "", false
}

// keptPrefix reports whether the words a wrapping error puts before the
// error it wraps are known ones: this package's own, or crypto/tls's
// and crypto/x509's when they quote nothing. net/http's words for an
// HTTP/1 connection that broke while the request was being written go
// (see brokenConnection).
func keptPrefix(prefix string) bool {
	switch prefix {
	case "", "read response body: ", "write CONNECT: ", "read CONNECT response: ":
		return true
	case brokenConnection:
		return false
	}
	return (strings.HasPrefix(prefix, "tls: ") || strings.HasPrefix(prefix, "x509: ")) && !strings.ContainsAny(prefix, "\"`")
}

// brokenConnection is what net/http puts before the error of an HTTP/1
// connection that broke when the request had been partly written, and
// not when it had not been: timing.
const brokenConnection = "net/http: HTTP/1.x transport connection broken: "
