package probing

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Limits of what a gRPC probe reads from its server.
const (
	// maxHealthResponseBytes bounds the HealthCheckResponse message (a
	// single enum: a few bytes); a larger one fails the call.
	maxHealthResponseBytes = 4 << 10
)

// GRPCProber probes grpc and grpcs targets with the standard gRPC health
// check: it calls grpc.health.v1.Health/Check for t.GRPC.Service and
// succeeds when the answer is SERVING. It is safe for concurrent use.
//
// Every probe opens a connection of its own, closed after the probe, so
// that it sees what a new client sees: it resolves the name (with the
// prober's resolver, not gRPC's), connects (under the egress policy and
// the target's IP family), shakes hands over TLS for grpcs, and sends one
// call, neither retried nor waiting for a connection that failed. Proxy
// settings from the environment are ignored, as by HTTPProber.
type GRPCProber struct {
	opts   ProberOptions // with defaults
	dialer *net.Dialer
}

var _ Prober = (*GRPCProber)(nil)

// NewGRPCProber returns a GRPCProber configured by opts: its DNSServer,
// Egress and UserAgent apply (see ProberOptions for the defaults).
func NewGRPCProber(opts ProberOptions) *GRPCProber {
	opts = opts.withDefaults()
	return &GRPCProber{opts: opts, dialer: newDialer(opts)}
}

// Probe calls the health service of t and judges the serving status:
// SERVING succeeds; NOT_SERVING gives ReasonNotServing, SERVICE_UNKNOWN
// ReasonServiceUnknown, anything else ReasonServingStatusUnknown. A call
// that fails with a gRPC status from the server (Unimplemented when it has
// no health service, NotFound for a service it does not know, ...) gives
// ReasonGRPCError, a connection that fails the reason of its error
// (ReasonDNSFailed, ReasonEgressDenied, ReasonTLSError, ...). t's Timeout
// bounds the whole probe; a cancelled ctx gives ReasonTimeout with a
// message that says so. Over TLS, the certificate expiry is reported as
// by HTTPProber. Then t's Judge, if any, judges the answer.
func (p *GRPCProber) Probe(ctx context.Context, t Target) Result {
	start := time.Now()
	b, err := t.forProber("gRPC", KindGRPC)
	if err != nil {
		return finish(Result{Reason: ReasonInvalidTarget, Message: err.Error()}, start)
	}
	var seen resolution
	seen.watch(b.url.Hostname(), b.Proxy != nil)
	res := finish(p.probe(ctx, b, &seen, start), start)
	res.ResolvedAddresses = seen.addresses()
	return res
}

func (p *GRPCProber) probe(ctx context.Context, t *builtTarget, seen *resolution, start time.Time) Result {
	prefix := "health check of " + strconv.Quote(t.redacted)
	if t.GRPC.Service != "" {
		prefix += " (service " + strconv.Quote(t.GRPC.Service) + ")"
	}
	prefix += ": "

	probeCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	rec := &connFailure{}
	client, err := grpc.NewClient("passthrough:///"+t.url.Host,
		grpc.WithTransportCredentials(p.credentials(t, rec)),
		grpc.WithContextDialer(p.dial(probeCtx, t, rec, seen)),
		grpc.WithNoProxy(),
		grpc.WithDisableRetry(),
		grpc.WithDisableServiceConfig(),
		grpc.WithUserAgent(p.opts.UserAgent),
		grpc.WithMaxHeaderListSize(MaxResponseHeaderBytes),
		// One connection attempt may last the whole probe.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.DefaultConfig, MinConnectTimeout: t.Timeout}),
	)
	if err != nil {
		return Result{Reason: ReasonInvalidTarget, Message: fmt.Sprintf("invalid target: %v", err)}
	}
	defer func() { _ = client.Close() }()

	var pr peer.Peer
	resp, err := healthpb.NewHealthClient(client).Check(probeCtx,
		&healthpb.HealthCheckRequest{Service: t.GRPC.Service},
		grpc.Peer(&pr), grpc.WaitForReady(false), grpc.MaxCallRecvMsgSize(maxHealthResponseBytes))
	latency := time.Since(start)
	var state *tls.ConnectionState
	if info, ok := pr.AuthInfo.(credentials.TLSInfo); ok {
		state = &info.State
	}
	var res Result
	if err != nil {
		res = p.failure(ctx, probeCtx, t, t.url.Host, rec, pr.Addr != nil, err)
		res.Message = prefix + res.Message
	} else {
		res = judgeServingStatus(resp.GetStatus(), state, t.CertExpiryWarning, prefix)
	}
	if state != nil {
		if cert := expiringCertificate(state); cert != nil {
			expiry := cert.NotAfter
			res.CertificateExpiry = &expiry
		}
		setPresentedCertificate(&res, state)
	}
	if res.Success && t.Judge != nil {
		answer := &Answer{
			Kind:    KindGRPC,
			Latency: latency,
			GRPC:    &GRPCAnswer{Status: resp.GetStatus().String()},
			TLS:     tlsAnswer(state),
		}
		judgeAnswer(probeCtx, t.Judge, answer, &res)
	}
	return res
}

// credentials returns the transport credentials of t: TLS for grpcs
// (NewTarget's configuration, with the URL's host name as the default
// server name), none for grpc. A TLS handshake error is recorded in rec.
func (p *GRPCProber) credentials(t *builtTarget, rec *connFailure) credentials.TransportCredentials {
	if t.tls == nil {
		return insecure.NewCredentials()
	}
	return recordingCredentials{TransportCredentials: credentials.NewTLS(t.tls), rec: rec}
}

// dial returns the dialer of a probe's client: dialTarget, bounded by the
// probe's context as well as gRPC's, its error recorded in rec and its
// name's addresses in seen.
func (p *GRPCProber) dial(probeCtx context.Context, t *builtTarget, rec *connFailure, seen *resolution) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(probeCtx, cancel)
		defer stop()
		conn, err := dialTarget(ctx, p.dialer, t, addr, seen)
		if err != nil {
			rec.set(err)
			return nil, err
		}
		return &closeRecordingConn{Conn: conn, rec: rec}, nil
	}
}

// closeRecordingConn is a probe's connection (the TCP one, and the TLS one
// on top of it once the handshake is done) that notes in rec a server that
// closed it before sending a byte. gRPC reports that as "error reading
// server preface: EOF", "...: connection reset by peer" or a reset of its
// own preface's write, depending on timing alone (see
// msgClosedBeforeAnswer). A write that fails because the server closed the
// connection is not reported at all: what the server sent before it
// closed, which the client reads next, is the answer, and which of the two
// gRPC would report first is timing again.
type closeRecordingConn struct {
	net.Conn
	rec     *connFailure
	gotData atomic.Bool
}

// Read reads as the wrapped connection does.
func (c *closeRecordingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.gotData.Store(true)
	}
	if err != nil && !c.gotData.Load() && closedByServer(err) {
		c.rec.closedSilently.Store(true)
	}
	return n, err
}

// Write writes as the wrapped connection does, except that a write to a
// connection the server closed succeeds (its bytes are lost).
func (c *closeRecordingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil && closedByServer(err) {
		return len(b), nil
	}
	return n, err
}

// failure classifies the error of a health check call. ctx is the
// caller's context, probeCtx the one bounded by the target's timeout, addr
// the target's host:port; reached tells whether the call was sent on a
// connection (its status then comes from the server, or from a connection
// that broke under it), rec holds the last connection error. The message
// comes without the probe's prefix.
func (p *GRPCProber) failure(ctx, probeCtx context.Context, t *builtTarget, addr string, rec *connFailure, reached bool, err error) Result {
	switch {
	case ctx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: "probe cancelled: " + ctx.Err().Error()}
	case probeCtx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: "timeout after " + t.Timeout.String()}
	case reached:
		return Result{Reason: ReasonGRPCError, Message: grpcStatusText(err)}
	}
	if cerr := rec.get(); cerr != nil {
		reason := connReason(cerr)
		if reason == ReasonConnectionFailed && closedByServer(cerr) { // a reset connect, a handshake cut short
			return Result{Reason: reason, Message: msgClosedBeforeAnswer}
		}
		host, _, _ := net.SplitHostPort(addr)
		scope := textScope{dnsServer: p.opts.dnsServerOf(t), addr: addr, names: []string{host, t.TLS.ServerName}}
		return withUnverifiedChain(Result{Reason: reason, Message: errorText(cerr, scope)}, cerr)
	}
	if rec.closedSilently.Load() {
		return Result{Reason: ReasonConnectionFailed, Message: msgClosedBeforeAnswer}
	}
	// The connection came up but not as HTTP/2 (a preface that is not
	// HTTP/2's, ...): gRPC's status says why, in words that quote the
	// server.
	return Result{Reason: ReasonConnectionFailed, Message: msgNoGRPCConnection}
}

// connReason is the Reason of a connection error: classify's, except that
// a handshake that failed otherwise than on the network (an unexpected
// ALPN protocol, ...) is a TLS error.
func connReason(err error) Reason {
	reason := classify(err)
	var hs *handshakeError
	if reason != ReasonConnectionFailed || !errors.As(err, &hs) {
		return reason
	}
	var netErr net.Error
	if errors.As(hs.err, &netErr) || errors.Is(hs.err, io.EOF) || errors.Is(hs.err, io.ErrUnexpectedEOF) {
		return reason
	}
	return ReasonTLSError
}

// msgNoGRPCConnection is the message of a connection that came up but
// failed before the call was sent on it: the server did not speak
// HTTP/2 as gRPC does. gRPC's own text (its frame parsing errors, a
// GOAWAY's debug data) may quote what the server sent.
const msgNoGRPCConnection = "the connection failed before the call: the server did not answer as a gRPC server (HTTP/2); " +
	"gRPC's error text is not shown: it may quote what the server sent"

// grpcOwnDescRE matches the descriptions gRPC's client gives its own
// failures of a call that hold numbers only: the size bound of a
// response.
var grpcOwnDescRE = regexp.MustCompile(`^grpc: received message (?:after decompression )?larger than max \(\d+ vs\. \d+\)$`)

// grpcStatusText names the gRPC status code of err. The status message
// is the server's text (or gRPC's, which quotes the server's headers and
// frames), not shown, but for the size bound of a response (see
// grpcOwnDescRE). The details, the server's too, are never shown.
func grpcStatusText(err error) string {
	st := status.Convert(err)
	text := "rpc error: code = " + st.Code().String()
	if desc := st.Message(); grpcOwnDescRE.MatchString(desc) {
		text += " desc = " + strconv.Quote(desc)
	}
	return text
}

// judgeServingStatus turns the serving status of a health check into a
// Result: SERVING succeeds, with a certificate warning when the chain of
// state (nil without TLS) expires within warning.
func judgeServingStatus(st healthpb.HealthCheckResponse_ServingStatus, state *tls.ConnectionState, warning time.Duration, prefix string) Result {
	switch st {
	case healthpb.HealthCheckResponse_SERVING:
		res := Result{Success: true, Reason: ReasonSucceeded, Message: ReadyMessage}
		if state != nil {
			res.CertificateWarning = BoundMessage(certificateExpiring(state, expiringCertificate(state), warning, time.Now()))
		}
		return res
	case healthpb.HealthCheckResponse_NOT_SERVING:
		return Result{Reason: ReasonNotServing, Message: prefix + "serving status NOT_SERVING"}
	case healthpb.HealthCheckResponse_SERVICE_UNKNOWN:
		return Result{Reason: ReasonServiceUnknown, Message: prefix + "serving status SERVICE_UNKNOWN"}
	default:
		return Result{Reason: ReasonServingStatusUnknown, Message: prefix + "serving status " + st.String()}
	}
}

// connFailure remembers the last error of a probe's connection attempts
// (dial or TLS handshake), and whether the server closed a connection
// before sending anything: gRPC reports them to the call only as text.
type connFailure struct {
	mu             sync.Mutex
	err            error
	closedSilently atomic.Bool
}

func (f *connFailure) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *connFailure) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// handshakeError is an error of the TLS handshake of a grpcs probe.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return "TLS handshake: " + e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

// recordingCredentials are TLS credentials that record the error of a
// failed handshake.
type recordingCredentials struct {
	credentials.TransportCredentials
	rec *connFailure
}

// ClientHandshake shakes hands as the wrapped credentials do.
func (c recordingCredentials) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tlsConn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err == nil {
		// The handshake's bytes were not an answer: watch for a close
		// before the server's HTTP/2 preface above TLS.
		return &closeRecordingConn{Conn: tlsConn, rec: c.rec}, info, nil
	}
	recorded := err
	if strings.Contains(err.Error(), "missing selected ALPN property") {
		recorded = errNoH2 // instead of grpc-go's advice to its upgraders
	}
	c.rec.set(&handshakeError{err: recorded})
	return tlsConn, info, err
}

// errNoH2 is the handshake error of a server that did not select HTTP/2
// with ALPN, which gRPC requires.
var errNoH2 = errors.New(`the server did not select HTTP/2 (ALPN "h2"), which gRPC requires`)

// Clone copies the credentials, recording into the same connFailure.
func (c recordingCredentials) Clone() credentials.TransportCredentials {
	return recordingCredentials{TransportCredentials: c.TransportCredentials.Clone(), rec: c.rec}
}
