package probing

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"time"
)

// Answer is everything one probe observed of its target, for a Judge to
// read: the parts of the kind probed are set, the others are nil. It is
// built only for a Target with a Judge, after the kind's own checks
// passed.
type Answer struct {
	// Kind is the kind of the probe.
	Kind Kind
	// Latency is how long the probe took until the answer was complete.
	Latency time.Duration
	// HTTP is the final response of an http or https probe.
	HTTP *HTTPAnswer
	// TLS is the handshake of a probe over TLS (https, tls, grpcs).
	TLS *TLSAnswer
	// TCP is the reply of a tcp or tls probe.
	TCP *TCPAnswer
	// GRPC is the health check response of a grpc or grpcs probe.
	GRPC *GRPCAnswer
	// DNS is the response of a dns probe.
	DNS *DNSAnswer
}

// HTTPAnswer is an HTTP response as a probe read it.
type HTTPAnswer struct {
	// StatusCode is the final status code.
	StatusCode int
	// Header holds the final response's headers (canonical names).
	Header http.Header
	// Body is the start of the body, as much as the prober reads (its
	// BodyLimit, or the BodyMatch's MaxBytes): never more.
	Body []byte
}

// TLSAnswer is a TLS handshake as a probe saw it.
type TLSAnswer struct {
	// Version is the negotiated version: "1.0", "1.1", "1.2" or "1.3".
	Version string
	// Expiry is the expiry of the served chain (see Result.CertificateExpiry).
	Expiry time.Time
	// Subject and Issuer are the leaf certificate's, in RFC 2253 form.
	Subject, Issuer string
	// DNSNames are the leaf certificate's DNS subject alternative names.
	DNSNames []string
}

// TCPAnswer is what a tcp or tls probe read from its connection.
type TCPAnswer struct {
	// Reply is what the server sent until the expected reply matched, up
	// to the read limit: empty without TCPOptions.Expect (nothing is read
	// then).
	Reply []byte
}

// GRPCAnswer is the response of the gRPC health check.
type GRPCAnswer struct {
	// Status is the serving status: "SERVING", "NOT_SERVING",
	// "SERVICE_UNKNOWN" or "UNKNOWN".
	Status string
}

// DNSAnswer is the response of a DNS query.
type DNSAnswer struct {
	// Rcode is the response code: "NOERROR", "NXDOMAIN", "SERVFAIL", ...
	Rcode string
	// Answers, Authority and Additional are the records of each section,
	// in zone-file form ("example.com. 300 IN A 192.0.2.1").
	Answers, Authority, Additional []string
}

// A Judge judges a probe's Answer after the kind's own checks passed: a
// WebChecker's spec.conditions (see the conditions package). A Judge is
// built once per spec and shared by every probe of its target; it must be
// safe for concurrent use.
type Judge interface {
	// Judge returns whether a holds, and otherwise a message that says
	// why (stable across identical answers: an unchanged failure writes
	// nothing).
	Judge(ctx context.Context, a *Answer) (ok bool, message string)
	// Source identifies what the Judge checks: two Judges with the same
	// Source judge alike (see Target.Equal).
	Source() string
	// NeedsBody reports whether the Judge reads HTTPAnswer.Body or
	// TCPAnswer.Reply: the prober keeps the body only then.
	NeedsBody() bool
}

// judgeAnswer runs j on a successful probe's answer and turns res into a
// ReasonConditionFailed failure when it does not hold. The certificate
// facts of res stay: the server answered, over the chain res describes.
func judgeAnswer(ctx context.Context, j Judge, a *Answer, res *Result) {
	ok, message := j.Judge(ctx, a)
	switch {
	case ok:
		return
	case ctx.Err() != nil:
		// Cut short: the caller gave up, or the probe's timeout expired
		// while judging. Not the conditions' verdict.
		res.Success, res.Reason, res.CertificateWarning = false, ReasonTimeout, ""
		res.Message = "probe cancelled while judging its conditions: " + ctx.Err().Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res.Message = "timeout while judging the conditions"
		}
		return
	}
	res.Success, res.Reason, res.Message, res.CertificateWarning = false, ReasonConditionFailed, message, ""
}

// tlsVersionNames are the TLSAnswer.Version of the TLS versions.
var tlsVersionNames = map[uint16]string{
	tls.VersionTLS10: "1.0", tls.VersionTLS11: "1.1", tls.VersionTLS12: "1.2", tls.VersionTLS13: "1.3",
}

// tlsAnswer describes a completed handshake for a Judge; nil without one.
func tlsAnswer(state *tls.ConnectionState) *TLSAnswer {
	if state == nil {
		return nil
	}
	a := &TLSAnswer{Version: tlsVersionNames[state.Version]}
	if cert := expiringCertificate(state); cert != nil {
		a.Expiry = cert.NotAfter
	}
	if len(state.PeerCertificates) > 0 {
		leaf := state.PeerCertificates[0]
		a.Subject, a.Issuer, a.DNSNames = leaf.Subject.String(), leaf.Issuer.String(), leaf.DNSNames
	}
	return a
}
