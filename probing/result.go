package probing

import (
	"context"
	"net/netip"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Reason is the machine-readable class of a probe outcome. Its values are
// valid Kubernetes condition reasons (CamelCase, no spaces).
type Reason string

const (
	// ReasonSucceeded means the server answered with an accepted status
	// code, the body matched the body check (if any) and the certificate
	// chain (if any) does not expire within the warning period.
	ReasonSucceeded Reason = "ProbeSucceeded"
	// ReasonDNSFailed means the host name could not be resolved.
	ReasonDNSFailed Reason = "DNSFailed"
	// ReasonConnectionFailed means no connection could be made or it broke
	// (refused, reset, unreachable, protocol error).
	ReasonConnectionFailed Reason = "ConnectionFailed"
	// ReasonTimeout means the probe did not complete within its timeout, or
	// was cancelled by its caller before (the message says which).
	ReasonTimeout Reason = "Timeout"
	// ReasonTLSError means the TLS handshake or certificate verification failed.
	ReasonTLSError Reason = "TLSError"
	// ReasonUnexpectedStatus means the server answered, but with a status
	// code that is not accepted.
	ReasonUnexpectedStatus Reason = "UnexpectedStatus"
	// ReasonTooManyRedirects means the redirect limit was reached.
	ReasonTooManyRedirects Reason = "TooManyRedirects"
	// ReasonInvalidTarget means the target cannot be probed at all: it is
	// the zero Target, which NewTarget did not build (NewTarget refuses a
	// URL that does not parse, a value left unresolved, TLS settings that
	// do not work, ...), or a target of a kind the prober does not probe.
	// The API
	// server's validation makes this rare; it is reported rather than
	// crashing or guessing.
	ReasonInvalidTarget Reason = "InvalidTarget"
	// ReasonBodyMismatch means the response body did not match the body
	// check (or, inverted, matched it).
	ReasonBodyMismatch Reason = "BodyMismatch"
	// ReasonEgressDenied means the egress policy refused to connect to the
	// address the target (or a redirect) resolved to.
	ReasonEgressDenied Reason = "EgressDenied"
	// ReasonConditionFailed means the answer passed the kind's own checks
	// but a condition of the target's Judge (spec.conditions) did not
	// hold; the message is the condition's.
	ReasonConditionFailed Reason = "ConditionFailed"
	// ReasonInvalidCondition means a condition does not compile or
	// type-check, so the target is not probed. A Prober never returns it:
	// the caller that compiles the conditions does.
	ReasonInvalidCondition Reason = "InvalidCondition"
	// ReasonUnexpectedReply means a tcp or tls server's reply did not
	// match the expected one (it closed the connection first, or sent more
	// than the read limit without a match).
	ReasonUnexpectedReply Reason = "UnexpectedReply"
	// ReasonNotServing means a gRPC health check answered NOT_SERVING.
	ReasonNotServing Reason = "NotServing"
	// ReasonServiceUnknown means a gRPC health check answered
	// SERVICE_UNKNOWN: the server does not know the service asked about.
	ReasonServiceUnknown Reason = "ServiceUnknown"
	// ReasonServingStatusUnknown means a gRPC health check answered
	// UNKNOWN (or a status this prober does not know).
	ReasonServingStatusUnknown Reason = "ServingStatusUnknown"
	// ReasonGRPCError means the gRPC health check call failed with a gRPC
	// status (Unimplemented when the server has no health service, ...);
	// the message names the code.
	ReasonGRPCError Reason = "GRPCError"
	// ReasonUnexpectedRcode means a DNS server answered with a response
	// code that is not accepted.
	ReasonUnexpectedRcode Reason = "UnexpectedRcode"
	// ReasonAnswerMismatch means a DNS response's answer section has no
	// record matching one of the expected regular expressions.
	ReasonAnswerMismatch Reason = "AnswerMismatch"
	// ReasonProxyFailed means the proxy refused or failed the probe's
	// connection (a CONNECT answered with a status other than 2xx, a 407,
	// or an unreachable proxy).
	ReasonProxyFailed Reason = "ProxyFailed"
	// ReasonSecretUnavailable means a Secret (or key) the checker refers to
	// cannot be read, so the probe is not run. A Prober never returns it:
	// the caller that reads the Secrets does.
	ReasonSecretUnavailable Reason = "SecretUnavailable"
	// ReasonSecretAccessDisabled means the checker refers to a Secret but
	// the operator runs with Secret access turned off, so the probe is not
	// run. A Prober never returns it either.
	ReasonSecretAccessDisabled Reason = "SecretAccessDisabled"
)

// ReadyMessage is the Result message of every successful probe.
const ReadyMessage = "WebChecker is ready"

// Result is the outcome of one probe.
type Result struct {
	// Success is true when the server answered as expected: the status
	// code and the body match passed (see ReasonSucceeded). A certificate
	// that expires soon does not fail a probe: see CertificateWarning.
	Success bool
	// Reason classifies the outcome: ReasonSucceeded when Success is true;
	// otherwise, from a Prober, one of ReasonDNSFailed,
	// ReasonConnectionFailed, ReasonTimeout, ReasonTLSError,
	// ReasonInvalidTarget, ReasonEgressDenied, ReasonProxyFailed or
	// ReasonConditionFailed (any kind), or a reason of the target's kind
	// (ReasonUnexpectedStatus, ReasonTooManyRedirects, ReasonBodyMismatch;
	// ReasonUnexpectedReply; ReasonNotServing, ReasonServiceUnknown,
	// ReasonServingStatusUnknown, ReasonGRPCError; ReasonUnexpectedRcode,
	// ReasonAnswerMismatch); or ReasonSecretUnavailable,
	// ReasonSecretAccessDisabled or ReasonInvalidCondition from a caller
	// that did not probe.
	Reason Reason
	// Message is a human readable description: ReadyMessage on success
	// (followed by ": " and the failing addresses when a probe of every
	// address succeeded with some failing, see AddressMode), otherwise
	// what failed. It is stable across repeated identical
	// failures (no durations, no ephemeral ports, no resolved addresses),
	// so that an unchanged failure does not look like a change. Messages
	// are bounded: valid UTF-8 of at most MaxMessageBytes bytes (see
	// BoundMessage). No message holds a byte the target (or a proxy) sent:
	// not its body, headers, reason phrase, redirect locations, reply,
	// certificate names (but for the printable name of an unknown
	// authority: see Certificate), DNS records or gRPC status message; errors whose
	// texts quote them are described in fixed words (see errorText). Only
	// what the user wrote (URL, names, patterns, expected codes) and
	// numbers (status codes, byte counts) appear.
	Message string
	// StatusCode is the final HTTP status code, or 0 when no response was
	// received.
	StatusCode int
	// Duration is how long the probe took, end to end.
	Duration time.Duration
	// CertificateExpiry is when the certificate chain of the final
	// response stops being valid, for responses received over TLS; nil
	// otherwise. Of the chains verification built from the server's
	// certificates to a trusted root, it is the one that lasts longest, and
	// its earliest expiry (NotAfter): certificates the server sent that no
	// verified chain needs do not count. Without verification
	// (InsecureSkipVerify) it is the expiry of the server's own (leaf)
	// certificate; when verification failed, the earliest expiry of the
	// certificates the server sent. It backs status.certificateExpiry and the
	// probe_ssl_earliest_cert_expiry metric.
	CertificateExpiry *time.Time
	// CertificateWarning, when not empty, says which certificate of the
	// chain expires sooner than the target's CertExpiryWarning (or has
	// expired, when verification is skipped), and when. It names the
	// certificate by its place (the server's own, or a CA certificate of
	// the chain), not by its subject, which the server chose. It is set only on
	// a successful probe, which it does not fail: the server answers, and
	// certificate validity is judged on its own.
	CertificateWarning string
	// Certificate describes the server's own certificate when the probe
	// shook hands, or when verification of the chain it presented failed
	// (then with Verified false, and CertificateExpiry the earliest expiry
	// of the certificates it sent); nil otherwise. Like Duration, it is not
	// part of the outcome (SameOutcome): a certificate renewed with the
	// same expiry changes no status.
	Certificate *Certificate
	// ClientCertificateExpiry is when the target's client certificate
	// (TLSOptions.ClientCertificate) expires, set by a KindProber; nil
	// without one. It backs the probe_client_cert_expiry metric.
	ClientCertificateExpiry *time.Time
	// Phases is how long each phase of the HTTP exchange took; phases that
	// did not happen are absent. Empty when the prober does not measure
	// phases. Like Duration, it is not part of the outcome (SameOutcome).
	Phases PhaseTimings
	// Addresses holds the result of each address probed, in netip order,
	// when the target probes every address of its name (see AddressMode);
	// nil otherwise. Its outcomes (not their durations) are part of the
	// outcome (SameOutcome).
	Addresses []AddressResult
	// ResolvedAddresses are the addresses the target's host name resolved
	// to for this probe (for a dns target, the name of its DNS server),
	// sorted, without duplicates, at most MaxResolvedAddresses; the
	// address itself for a host that is an IP literal. It is nil when the
	// probe did not resolve the name: the lookup failed, a kept-alive
	// connection was reused, or the target goes through a proxy (which
	// resolves it). The probe learns them from its own dial, without a
	// query of its own. They are not part of the outcome (SameOutcome),
	// nor of any message: round-robin DNS must not rewrite a status, and
	// the addresses are the DNS server's answer.
	ResolvedAddresses []netip.Addr
	// FinalURL is the URL of the final response of an http or https probe
	// (the target's URL, or the last redirect's location when redirects
	// are followed), without user information and cut to MaxFinalURLBytes;
	// "" when no final response was received, and for the other kinds. A
	// redirect location is the server's choice: it is kept to tell that it
	// changed, never printed. Not part of the outcome (SameOutcome).
	FinalURL string
}

// MaxFinalURLBytes bounds Result.FinalURL, in bytes.
const MaxFinalURLBytes = 2048

// SameOutcome reports whether r and o describe the same observable outcome,
// ignoring how long the probes took.
func (r Result) SameOutcome(o Result) bool {
	return r.Success == o.Success && r.Reason == o.Reason && r.Message == o.Message && r.StatusCode == o.StatusCode &&
		sameTime(r.CertificateExpiry, o.CertificateExpiry) && r.CertificateWarning == o.CertificateWarning &&
		sameAddressOutcomes(r.Addresses, o.Addresses)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// Prober probes one target. Implementations must honour ctx cancellation and
// the target's timeout, and must be safe for concurrent use.
type Prober interface {
	Probe(ctx context.Context, target Target) Result
}

// ProberFunc adapts a function to the Prober interface.
type ProberFunc func(ctx context.Context, target Target) Result

// Probe calls f(ctx, target).
func (f ProberFunc) Probe(ctx context.Context, target Target) Result { return f(ctx, target) }

// MaxMessageBytes is the size of a bounded Result message (BoundMessage), in
// bytes: a hostile or broken target must not make the prober keep (and
// write to the checker's status and Events) megabytes of text.
const MaxMessageBytes = 1024

// truncationMarker replaces what BoundMessage cuts out, and ends what
// Truncate cuts.
const truncationMarker = "…"

// Truncate returns s as valid UTF-8 (invalid bytes become U+FFFD) of at
// most n bytes. A longer text is cut at a rune boundary and ends in "…"
// (3 bytes, counted in n), so that the cut shows; when n leaves no room
// for the mark (n < 3), the text is cut without one. n <= 0 gives "".
// Unlike BoundMessage, it keeps the start only, and leaves control
// characters as they are.
func Truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	marker := truncationMarker
	if n < len(marker) {
		marker = ""
	}
	cut := n - len(marker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}

// finish completes the Result of a probe that started at start: its
// message bounded (BoundMessage) and its Duration measured. Probers call
// it last, so that Duration covers all of the probe.
func finish(res Result, start time.Time) Result {
	res.Message = BoundMessage(res.Message)
	res.Duration = time.Since(start)
	return res
}

// BoundMessage returns msg as a Result may carry it: valid UTF-8 (invalid
// bytes become U+FFFD), on one line (line breaks and tabs become spaces,
// other control characters U+FFFD: no terminal escapes in a status), and
// at most MaxMessageBytes bytes. A longer message loses its middle, marked
// with "…", so that both the start (what was probed) and the end (the
// cause) stay; the cut never splits a rune. The same input always gives
// the same output.
func BoundMessage(msg string) string {
	msg = strings.ToValidUTF8(msg, string(utf8.RuneError))
	if strings.IndexFunc(msg, unicode.IsControl) >= 0 {
		msg = strings.Map(func(r rune) rune {
			switch {
			case r == '\n' || r == '\r' || r == '\t':
				return ' '
			case unicode.IsControl(r):
				return utf8.RuneError
			}
			return r
		}, msg)
	}
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	budget := MaxMessageBytes - len(truncationMarker)
	head := budget / 2
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	tail := len(msg) - (budget - head)
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return msg[:head] + truncationMarker + msg[tail:]
}
