package probing

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strconv"
	"time"
)

// TCPProber probes tcp and tls targets: it resolves the name, connects
// (through the egress policy, restricted to the target's IP family),
// shakes hands for tls, and then, when the target has TCPOptions, sends
// their query and waits for the reply they expect. Every probe has a
// connection of its own, closed when the probe ends. It is safe for
// concurrent use.
//
// Without TCPOptions.Expect nothing is read: the Answer's TCPAnswer.Reply
// is empty, even for a Judge that reads it. Reading "whatever the server
// sends" has no stable end (a server that keeps the connection open sends
// it in pieces, at times of its own), so only an Expect says when the
// reply is complete.
type TCPProber struct {
	opts   ProberOptions // with defaults
	dialer *net.Dialer
}

var _ Prober = (*TCPProber)(nil)

// NewTCPProber returns a TCPProber configured by opts: its DNSServer and
// Egress apply (see ProberOptions for the defaults).
func NewTCPProber(opts ProberOptions) *TCPProber {
	opts = opts.withDefaults()
	return &TCPProber{opts: opts, dialer: newDialer(opts)}
}

// Probe connects to the host and port of t's URL, shakes hands for tls
// (judging the certificate chain as the HTTP prober does), sends TCP.Send
// and reads until TCP.Expect matches (see readReply), then runs the Judge.
// The Timeout bounds all of it. Probe never panics: the zero Target, or a
// target that is not tcp or tls, gives ReasonInvalidTarget.
func (p *TCPProber) Probe(ctx context.Context, t Target) Result {
	start := time.Now()
	b, err := t.forProber("TCP", KindTCP, KindTLS)
	if err != nil {
		return finish(Result{Reason: ReasonInvalidTarget, Message: err.Error()}, start)
	}
	var seen resolution
	seen.watchAddr(b.addr, b.Proxy != nil)
	res := finish(p.probe(ctx, b, &seen, start), start)
	res.ResolvedAddresses = seen.addresses()
	return res
}

func (p *TCPProber) probe(ctx context.Context, t *builtTarget, seen *resolution, start time.Time) Result {
	probeCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()

	raw, err := dialTarget(probeCtx, p.dialer, t, t.addr, seen)
	if err != nil {
		return p.failure(ctx, probeCtx, t, "connect", err)
	}
	conn := raw
	defer func() { closeProbeConn(probeCtx, conn, raw) }()
	// The deadline bounds every read and write; cancelling the caller's
	// context moves it to the past, which interrupts them too.
	if deadline, ok := probeCtx.Deadline(); ok {
		_ = raw.SetDeadline(deadline)
	}
	stop := context.AfterFunc(probeCtx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var state *tls.ConnectionState
	if t.tls != nil {
		tc := tls.Client(raw, t.tls)
		if err := tc.HandshakeContext(probeCtx); err != nil {
			return p.failure(ctx, probeCtx, t, "handshake", err)
		}
		s := tc.ConnectionState()
		conn, state = tc, &s
	}

	var reply []byte
	if o := t.TCP; o != nil {
		if o.Send != "" {
			// A server that closed the connection may have answered
			// first: its reply is still read.
			if _, err := io.WriteString(conn, o.Send); err != nil && (o.Expect == nil || !closedByServer(err)) {
				return p.failure(ctx, probeCtx, t, "send", err)
			}
		}
		if o.Expect != nil {
			var end replyEnd
			if reply, end, err = readReply(probeCtx, conn, o.Expect, o.MaxBytes); err != nil {
				return p.failure(ctx, probeCtx, t, "read", err)
			}
			if end != replyMatched {
				res := Result{Reason: ReasonUnexpectedReply, Message: unexpectedReplyMessage(t.redacted, o, end)}
				setCertificateExpiry(&res, state)
				return res
			}
		}
	}

	res := Result{Success: true, Reason: ReasonSucceeded, Message: ReadyMessage}
	cert := setCertificateExpiry(&res, state)
	res.CertificateWarning = BoundMessage(certificateExpiring(state, cert, t.CertExpiryWarning, time.Now()))
	if t.Judge != nil {
		answer := &Answer{
			Kind:    t.kind,
			Latency: time.Since(start),
			TCP:     &TCPAnswer{Reply: reply},
			TLS:     tlsAnswer(state),
		}
		judgeAnswer(probeCtx, t.Judge, answer, &res)
	}
	return res
}

// setCertificateExpiry sets res.CertificateExpiry from the handshake (see
// expiringCertificate) and returns the certificate it comes from; nil
// without a handshake.
func setCertificateExpiry(res *Result, state *tls.ConnectionState) *x509.Certificate {
	if state == nil {
		return nil
	}
	cert := expiringCertificate(state)
	if cert != nil {
		expiry := cert.NotAfter
		res.CertificateExpiry = &expiry
	}
	setPresentedCertificate(res, state)
	return cert
}

// closeProbeConn closes a probe's connection. A TLS connection of a probe
// that ended in time says goodbye (close_notify); after a timeout or a
// cancellation, or without TLS, the TCP connection is simply closed, so
// that closing never waits for a peer that does not read.
func closeProbeConn(probeCtx context.Context, conn, raw net.Conn) {
	if tc, ok := conn.(*tls.Conn); ok && probeCtx.Err() == nil {
		_ = tc.Close() // closes raw too
		return
	}
	_ = raw.Close()
}

// failure classifies the error of the step op ("connect", "handshake",
// "send", "read") of a tcp or tls probe. ctx is the caller's context,
// probeCtx the one bounded by the target's timeout, whose deadline is
// also the connection's: a network timeout is the probe's timeout. The
// message names the step and the URL, as the HTTP prober's name the
// method and URL, and quotes nothing the server sent (see errorText).
func (p *TCPProber) failure(ctx, probeCtx context.Context, t *builtTarget, op string, err error) Result {
	prefix := op + " " + strconv.Quote(t.redacted) + ": "
	switch {
	case ctx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: prefix + "probe cancelled: " + ctx.Err().Error()}
	case probeCtx.Err() != nil, classify(err) == ReasonTimeout: // the deadline is probeCtx's
		return Result{Reason: ReasonTimeout, Message: prefix + "timeout after " + t.Timeout.String()}
	}
	reason := classify(err)
	if reason == ReasonConnectionFailed && closedByServer(err) {
		// A close (or a reset) during the handshake or a send: nothing
		// was read yet (see msgClosedBeforeAnswer).
		return Result{Reason: reason, Message: prefix + msgClosedBeforeAnswer}
	}
	host, _, _ := net.SplitHostPort(t.addr)
	scope := textScope{dnsServer: p.opts.dnsServerOf(t), addr: t.addr, names: []string{host, t.TLS.ServerName}}
	return withUnverifiedChain(Result{Reason: reason, Message: prefix + errorText(err, scope)}, err)
}
