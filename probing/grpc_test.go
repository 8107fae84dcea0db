package probing_test

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

// grpcServer is a loopback gRPC server started by a test.
type grpcServer struct {
	addr    string // host:port listened on
	port    string
	health  *health.Server // nil without the health service
	accepts atomic.Int64   // connections accepted
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// grpcServerOptions configure startGRPC.
type grpcServerOptions struct {
	ip       string                 // 127.0.0.1 when empty
	cert     *probetest.Certificate // serves TLS when set
	health   healthpb.HealthServer  // the standard health.Server when nil
	noHealth bool                   // no health service at all
	// clientCAs, with cert, makes the server require a client
	// certificate they signed.
	clientCAs *x509.CertPool
}

// startGRPC starts a gRPC server, stopped when the test ends.
func startGRPC(t *testing.T, o grpcServerOptions) *grpcServer {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(cmp.Or(o.ip, "127.0.0.1"), "0"))
	require.NoError(t, err)
	s := &grpcServer{addr: ln.Addr().String()}
	_, s.port, _ = net.SplitHostPort(s.addr)
	var opts []grpc.ServerOption
	switch {
	case o.cert != nil && o.clientCAs != nil:
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{o.cert.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: o.clientCAs,
		})))
	case o.cert != nil:
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(&o.cert.TLS)))
	}
	srv := grpc.NewServer(opts...)
	switch {
	case o.noHealth:
	case o.health != nil:
		healthpb.RegisterHealthServer(srv, o.health)
	default:
		s.health = health.NewServer()
		healthpb.RegisterHealthServer(srv, s.health)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(countingListener{Listener: ln, n: &s.accepts}) })
	t.Cleanup(func() {
		srv.Stop()
		wg.Wait()
	})
	return s
}

// fakeHealth answers every Check with check's answer.
type fakeHealth struct {
	healthpb.UnimplementedHealthServer
	check func() (*healthpb.HealthCheckResponse, error)
}

func (f *fakeHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return f.check()
}

// newKindProber returns the prober of every kind, asking only dns.
func newKindProber(t testing.TB, dns *probetest.DNSServer, opts probing.ProberOptions) *probing.KindProber {
	t.Helper()
	opts.DNSServer = dns.Addr()
	p := probing.NewProber(opts)
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// grpcTarget is a grpc(s) target of url asking about service.
func grpcTarget(url, service string) probing.TargetSpec {
	return probing.TargetSpec{URL: url, Timeout: relaxedTimeout, GRPC: probing.GRPCOptions{Service: service}}
}

// probeTwice probes t twice and checks that both probes had the same
// outcome (stable messages), returning the first.
func probeTwice(t *testing.T, p probing.Prober, target probing.TargetSpec) probing.Result {
	t.Helper()
	res := probe(t.Context(), p, target)
	again := probe(t.Context(), p, target)
	assert.True(t, res.SameOutcome(again), "stable outcome:\n%+v\n%+v", res, again)
	assert.Positive(t, res.Duration)
	return res
}

func TestGRPCProberServingStatus(t *testing.T) {
	t.Parallel()
	srv := startGRPC(t, grpcServerOptions{})
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	url := "grpc://" + srv.addr

	res := probeTwice(t, prober, grpcTarget(url, ""))
	assert.Equal(t, probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage}, withoutDuration(res))
	assert.EqualValues(t, 2, srv.accepts.Load(), "one connection per probe")

	// The status of a named service switches between probes.
	steps := []struct {
		status      healthpb.HealthCheckResponse_ServingStatus
		wantSuccess bool
		wantReason  probing.Reason
		wantMessage string
	}{
		{healthpb.HealthCheckResponse_SERVING, true, probing.ReasonSucceeded, probing.ReadyMessage},
		{healthpb.HealthCheckResponse_NOT_SERVING, false, probing.ReasonNotServing,
			`health check of "` + url + `" (service "shop.Cart"): serving status NOT_SERVING`},
		{healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false, probing.ReasonServiceUnknown,
			`health check of "` + url + `" (service "shop.Cart"): serving status SERVICE_UNKNOWN`},
		{healthpb.HealthCheckResponse_UNKNOWN, false, probing.ReasonServingStatusUnknown,
			`health check of "` + url + `" (service "shop.Cart"): serving status UNKNOWN`},
		{healthpb.HealthCheckResponse_SERVING, true, probing.ReasonSucceeded, probing.ReadyMessage},
	}
	for _, step := range steps {
		srv.health.SetServingStatus("shop.Cart", step.status)
		res := probeTwice(t, prober, grpcTarget(url, "shop.Cart"))
		assert.Equal(t, step.wantSuccess, res.Success, "%v: %+v", step.status, res)
		assert.Equal(t, step.wantReason, res.Reason, "%v: %+v", step.status, res)
		assert.Equal(t, step.wantMessage, res.Message, "%v", step.status)
		assert.Nil(t, res.CertificateExpiry)
	}

	// The empty service is the server as a whole, apart from shop.Cart.
	srv.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	res = probe(t.Context(), prober, grpcTarget(url, ""))
	assert.Equal(t, probing.ReasonNotServing, res.Reason, "%+v", res)
	assert.Equal(t, `health check of "`+url+`": serving status NOT_SERVING`, res.Message)

	// A service the health server does not know: NotFound.
	res = probeTwice(t, prober, grpcTarget(url, "shop.Nothing"))
	assert.Equal(t, probing.ReasonGRPCError, res.Reason, "%+v", res)
	assert.Equal(t, `health check of "`+url+`" (service "shop.Nothing"): rpc error: code = NotFound`, res.Message)
}

func TestGRPCProberIPv6(t *testing.T) {
	t.Parallel()
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		require.NoError(t, ln.Close())
	}
	srv := startGRPC(t, grpcServerOptions{ip: "::1"})
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	res := probe(t.Context(), prober, grpcTarget("grpc://"+srv.addr, ""))
	assert.True(t, res.Success, "%+v", res)
	assert.Equal(t, "[::1]:"+srv.port, srv.addr)

	// healthy.test has no IPv6 address.
	target := grpcTarget("grpc://healthy.test:"+srv.port, "")
	target.IPFamily = probing.IPFamilyIPv6
	res = probe(t.Context(), prober, target)
	assert.False(t, res.Success, "%+v", res)
	assert.NotEqual(t, probing.ReasonTimeout, res.Reason, "%+v", res)
}

// withoutDuration is r without what the outcome leaves out and a table
// does not fix: its duration and the addresses its name resolved to.
func withoutDuration(r probing.Result) probing.Result {
	r.Duration, r.ResolvedAddresses = 0, nil
	return r
}

func TestGRPCProberRPCErrors(t *testing.T) {
	t.Parallel()
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	long := strings.Repeat("é", 10<<10) + "\n\x1b[31m"
	tests := map[string]struct {
		server      grpcServerOptions
		wantReason  probing.Reason
		wantMessage string // after "health check of URL: "
	}{
		"no health service": {
			server:      grpcServerOptions{noHealth: true},
			wantReason:  probing.ReasonGRPCError,
			wantMessage: `rpc error: code = Unimplemented`,
		},
		"permission denied with a long description": {
			server: grpcServerOptions{health: &fakeHealth{check: func() (*healthpb.HealthCheckResponse, error) {
				return nil, status.Error(codes.PermissionDenied, long)
			}}},
			wantReason:  probing.ReasonGRPCError,
			wantMessage: `rpc error: code = PermissionDenied`, // the server's description is not shown
		},
		"status without a name": {
			server: grpcServerOptions{health: &fakeHealth{check: func() (*healthpb.HealthCheckResponse, error) {
				return &healthpb.HealthCheckResponse{Status: 42}, nil
			}}},
			wantReason:  probing.ReasonServingStatusUnknown,
			wantMessage: "serving status 42",
		},
		"response larger than a health check's": {
			server: grpcServerOptions{health: &fakeHealth{check: func() (*healthpb.HealthCheckResponse, error) {
				// An unknown field of 1 MiB rides along.
				resp := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
				field := protowire.AppendTag(nil, 99, protowire.BytesType)
				resp.ProtoReflect().SetUnknown(protowire.AppendBytes(field, make([]byte, 1<<20)))
				return resp, nil
			}}},
			wantReason:  probing.ReasonGRPCError,
			wantMessage: `rpc error: code = ResourceExhausted desc = "grpc: received message larger than max (1048583 vs. 4096)"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := startGRPC(t, tc.server)
			url := "grpc://" + srv.addr
			res := probeTwice(t, prober, grpcTarget(url, ""))
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			if tc.wantMessage != "" {
				assert.Equal(t, `health check of "`+url+`": `+tc.wantMessage, res.Message)
			}
			assert.LessOrEqual(t, len(res.Message), probing.MaxMessageBytes)
		})
	}
}

// grpcTLSServers are the servers of TestGRPCProberTLS: secure serves a
// 30-day leaf that the CA ca issued, expiring a self-signed certificate
// that expires in 48 hours, plain no TLS; noALPN is the port of a TLS
// server without h2 in its ALPN, noALPNAtAll of one without ALPN at all.
// untrusted is a certificate for healthy.test that no server serves.
type grpcTLSServers struct {
	ca, leaf, expiring, untrusted probetest.Certificate
	secure, expiringSrv, plain    *grpcServer
	noALPN, noALPNAtAll           string
}

func startGRPCTLSServers(t *testing.T) grpcTLSServers {
	t.Helper()
	now := time.Now()
	ca := probetest.NewCertificate(t, "ca.test", now.Add(-time.Hour), now.Add(90*24*time.Hour))
	leaf := probetest.CertificateTemplate{Name: "healthy.test", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour), Issuer: &ca, Leaf: true}.Issue(t)
	expiring := probetest.NewCertificate(t, "healthy.test", now.Add(-time.Hour), now.Add(48*time.Hour))
	untrusted := probetest.NewCertificate(t, "healthy.test", now.Add(-time.Hour), now.Add(90*24*time.Hour))

	served := probetest.Certificate{TLS: probetest.Chain(leaf, ca), X509: leaf.X509}
	secure := startGRPC(t, grpcServerOptions{cert: &served})
	expiringSrv := startGRPC(t, grpcServerOptions{cert: &expiring})
	plain := startGRPC(t, grpcServerOptions{})
	noALPN := startTLSServer(t, &leaf, 0) // HTTP/1.1 only: no h2 in ALPN
	noALPNAtAll := tlsSilentServer(t, probetest.Chain(leaf, ca))
	return grpcTLSServers{
		ca: ca, leaf: leaf, expiring: expiring, untrusted: untrusted,
		secure: secure, expiringSrv: expiringSrv, plain: plain,
		noALPN: portOf(t, noALPN.Listener.Addr()), noALPNAtAll: noALPNAtAll,
	}
}

// grpcTLSTarget is a grpc target for url with TLS options o and a certificate
// expiry warning.
func grpcTLSTarget(url string, o probing.TLSOptions, warning time.Duration) probing.TargetSpec {
	target := grpcTarget(url, "")
	target.TLS, target.CertExpiryWarning = o, warning
	return target
}

// grpcTLSFailure is a target of TestGRPCProberTLS that fails, with the
// reason and, when set, the exact message.
type grpcTLSFailure struct {
	target      probing.TargetSpec
	wantReason  probing.Reason
	wantMessage string
}

// grpcTLSFailures are the targets on s that TestGRPCProberTLS probes and
// that fail.
func grpcTLSFailures(s grpcTLSServers) map[string]grpcTLSFailure {
	ca, untrusted, secure, plain := s.ca, s.untrusted, s.secure, s.plain
	trustCA := probing.TLSOptions{RootCAs: ca.PEM}
	return map[string]grpcTLSFailure{
		"untrusted certificate": {
			target:      grpcTLSTarget("grpcs://healthy.test:"+secure.port, probing.TLSOptions{RootCAs: untrusted.PEM}, 0),
			wantReason:  probing.ReasonTLSError,
			wantMessage: `health check of "grpcs://healthy.test:` + secure.port + `": TLS handshake: tls: failed to verify certificate: x509: certificate signed by unknown authority`,
		},
		"system roots": {
			target:     grpcTLSTarget("grpcs://healthy.test:"+secure.port, probing.TLSOptions{}, 0),
			wantReason: probing.ReasonTLSError,
		},
		"wrong server name": {
			target:      grpcTLSTarget("grpcs://healthy.test:"+secure.port, probing.TLSOptions{RootCAs: ca.PEM, ServerName: "other.test"}, 0),
			wantReason:  probing.ReasonTLSError,
			wantMessage: `health check of "grpcs://healthy.test:` + secure.port + `": TLS handshake: tls: failed to verify certificate: x509: certificate is not valid for "other.test"`,
		},
		"TLS server without h2": {
			target:     grpcTLSTarget("grpcs://healthy.test:"+s.noALPN, trustCA, 0),
			wantReason: probing.ReasonTLSError,
		},
		"grpcs to a plaintext server": {
			target:      grpcTLSTarget("grpcs://healthy.test:"+plain.port, trustCA, 0),
			wantReason:  probing.ReasonTLSError,
			wantMessage: `health check of "grpcs://healthy.test:` + plain.port + `": TLS handshake: tls: first record does not look like a TLS handshake`,
		},
		"grpc to a TLS server": {
			target:      grpcTarget("grpc://healthy.test:"+secure.port, ""),
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: `health check of "grpc://healthy.test:` + secure.port + `": the server closed the connection before answering`,
		},
		"TLS server without ALPN": {
			target:      grpcTLSTarget("grpcs://healthy.test:"+s.noALPNAtAll, trustCA, 0),
			wantReason:  probing.ReasonTLSError,
			wantMessage: `health check of "grpcs://healthy.test:` + s.noALPNAtAll + `": TLS handshake: the server did not select HTTP/2 (ALPN "h2"), which gRPC requires`,
		},
	}
}

func TestGRPCProberTLS(t *testing.T) {
	t.Parallel()
	s := startGRPCTLSServers(t)
	secure, expiringSrv, leaf, expiring := s.secure, s.expiringSrv, s.leaf, s.expiring
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	trustCA := probing.TLSOptions{RootCAs: s.ca.PEM}

	// By name: the host name is the server name by default.
	res := probeTwice(t, prober, grpcTLSTarget("grpcs://healthy.test:"+secure.port, trustCA, 7*24*time.Hour))
	require.True(t, res.Success, "%+v", res)
	require.NotNil(t, res.CertificateExpiry)
	assert.Equal(t, leaf.X509.NotAfter, *res.CertificateExpiry, "the leaf expires first")
	assert.Empty(t, res.CertificateWarning)

	// By address, with the leaf's name as ServerName.
	res = probe(t.Context(), prober, grpcTLSTarget("grpcs://"+secure.addr, probing.TLSOptions{RootCAs: s.ca.PEM, ServerName: "healthy.test"}, 0))
	assert.True(t, res.Success, "%+v", res)

	// A chain that expires within the warning: success with a warning.
	res = probeTwice(t, prober, grpcTLSTarget("grpcs://healthy.test:"+expiringSrv.port, probing.TLSOptions{RootCAs: expiring.PEM}, 7*24*time.Hour))
	assert.True(t, res.Success, "%+v", res)
	require.NotNil(t, res.CertificateExpiry)
	assert.Equal(t, expiring.X509.NotAfter, *res.CertificateExpiry)
	assert.Contains(t, res.CertificateWarning, `the server's certificate expires at`)

	// A certificate that expires within the warning but does not answer
	// SERVING: no warning, the expiry stays.
	expiringSrv.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	res = probe(t.Context(), prober, grpcTLSTarget("grpcs://healthy.test:"+expiringSrv.port, probing.TLSOptions{RootCAs: expiring.PEM}, 7*24*time.Hour))
	assert.Equal(t, probing.ReasonNotServing, res.Reason, "%+v", res)
	assert.NotNil(t, res.CertificateExpiry)
	assert.Empty(t, res.CertificateWarning)

	// A CA bundle without a certificate is not built.
	_, err := probing.NewTarget(grpcTLSTarget("grpcs://healthy.test:"+secure.port, probing.TLSOptions{RootCAs: []byte("junk")}, 0))
	assert.EqualError(t, err, "invalid target: TLS settings: the CA bundle holds no PEM-encoded certificate")

	for name, tc := range grpcTLSFailures(s) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := probeTwice(t, prober, tc.target)
			t.Log(res.Message)
			assert.False(t, res.Success)
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			if tc.wantMessage != "" {
				assert.Equal(t, tc.wantMessage, res.Message)
			}
			assert.NotContains(t, res.Message, "127.0.0.1", "no resolved address: %s", res.Message)
			assert.Empty(t, res.CertificateWarning)
		})
	}
}

func portOf(t *testing.T, addr net.Addr) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr.String())
	require.NoError(t, err)
	return port
}

func TestGRPCProberConnectionFailures(t *testing.T) {
	t.Parallel()
	dns := probetest.NewTestDNSServer(t, map[string][]net.IP{
		"healthy.test": {net.IPv4(127, 0, 0, 1)},
		"denied.test":  {net.ParseIP(deniedAddr)},
	})
	prefixes, err := egress.ParseCIDRs([]string{deniedAddr + "/32"})
	require.NoError(t, err)
	prober := newKindProber(t, dns, probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{Deny: prefixes, Allow: loopbackOne})})
	denied := startGRPC(t, grpcServerOptions{ip: deniedAddr})
	allowed := startGRPC(t, grpcServerOptions{})
	refused := closedPort(t)
	_, refusedPort, _ := net.SplitHostPort(refused)

	tests := map[string]struct {
		url         string
		wantReason  probing.Reason
		wantMessage string
	}{
		"connection refused": {
			url:         "grpc://" + refused,
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: `health check of "grpc://` + refused + `": dial tcp ` + refused + `: connect: connection refused`,
		},
		"connection refused by name": {
			url:         "grpcs://healthy.test:" + refusedPort,
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: `health check of "grpcs://healthy.test:` + refusedPort + `": dial tcp healthy.test:` + refusedPort + `: connect: connection refused`,
		},
		"unknown name": {
			url:         "grpc://nowhere.test:" + allowed.port,
			wantReason:  probing.ReasonDNSFailed,
			wantMessage: `health check of "grpc://nowhere.test:` + allowed.port + `": dial tcp: lookup nowhere.test on ` + dns.Addr() + `: no such host`,
		},
		"denied address": {
			url:         "grpc://" + denied.addr,
			wantReason:  probing.ReasonEgressDenied,
			wantMessage: `health check of "grpc://` + denied.addr + `": dial tcp ` + denied.addr + `: egress to 127.0.0.2 denied: denied range 127.0.0.2/32 (--deny-cidrs)`,
		},
		"name resolving to a denied address": {
			url:        "grpcs://denied.test:" + denied.port,
			wantReason: probing.ReasonEgressDenied,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res := probeTwice(t, prober, grpcTarget(tc.url, ""))
			assert.False(t, res.Success)
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			if tc.wantMessage != "" {
				assert.Equal(t, tc.wantMessage, res.Message)
			}
			assert.Contains(t, res.Message, `health check of "`+tc.url+`": `)
			assert.Less(t, time.Since(start), relaxedTimeout, "a failed connection fails the probe at once")
		})
	}
	assert.Zero(t, denied.accepts.Load(), "a denied server was reached")
	res := probe(t.Context(), prober, grpcTarget("grpc://healthy.test:"+allowed.port, ""))
	assert.True(t, res.Success, "the policy lets allowed addresses through: %+v", res)
}

// silentServer accepts connections and reads what they send without ever
// answering, until the test ends.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	return ln.Addr().String()
}

// tlsSilentServer accepts TLS connections with cert, without ALPN, and
// reads what they send without ever answering, until the test ends. It
// returns its port.
func tlsSilentServer(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveRaw(t, tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}), func(c net.Conn) {
		_, _ = io.Copy(io.Discard, c)
	})
	return portOf(t, ln.Addr())
}

func TestGRPCProberTimeout(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	const timeout = 500 * time.Millisecond
	for _, url := range []string{"grpc://" + addr, "grpcs://" + addr} {
		t.Run(url, func(t *testing.T) {
			t.Parallel()
			target := grpcTarget(url, "")
			target.Timeout = timeout
			start := time.Now()
			res := probe(t.Context(), prober, target)
			elapsed := time.Since(start)
			assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
			assert.Equal(t, `health check of "`+url+`": timeout after 500ms`, res.Message)
			assert.GreaterOrEqual(t, elapsed, timeout)
			assert.Less(t, elapsed, timeout+slack)
		})
	}
}

func TestGRPCProberCancelled(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	srv := startGRPC(t, grpcServerOptions{})
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := probe(ctx, prober, grpcTarget("grpc://"+srv.addr, ""))
	assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
	assert.Equal(t, `health check of "grpc://`+srv.addr+`": probe cancelled: context canceled`, res.Message)

	// The caller gives up while the probe waits for a silent server.
	ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res = probe(ctx, prober, grpcTarget("grpc://"+addr, ""))
	assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
	assert.Equal(t, `health check of "grpc://`+addr+`": probe cancelled: context deadline exceeded`, res.Message)
	assert.Less(t, time.Since(start), 300*time.Millisecond+slack)
}

// recordingJudge holds when ok, and remembers what it judged.
type recordingJudge struct {
	ok      bool
	mu      sync.Mutex
	answers []*probing.Answer
}

func (j *recordingJudge) Judge(_ context.Context, a *probing.Answer) (bool, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.answers = append(j.answers, a)
	if j.ok {
		return true, ""
	}
	return false, "condition on grpc.status " + a.GRPC.Status + " failed"
}

func (j *recordingJudge) Source() string  { return "recording" }
func (j *recordingJudge) NeedsBody() bool { return false }

func (j *recordingJudge) judged() []*probing.Answer {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.answers)
}

func TestGRPCProberJudge(t *testing.T) {
	t.Parallel()
	cert := probetest.NewCertificate(t, "healthy.test", time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	srv := startGRPC(t, grpcServerOptions{cert: &cert})
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	url := "grpcs://healthy.test:" + srv.port
	target := func(j probing.Judge) probing.TargetSpec {
		target := grpcTarget(url, "")
		target.TLS.RootCAs, target.CertExpiryWarning, target.Judge = cert.PEM, 7*24*time.Hour, j
		return target
	}

	holds := &recordingJudge{ok: true}
	res := probe(t.Context(), prober, target(holds))
	assert.True(t, res.Success, "%+v", res)
	assert.NotEmpty(t, res.CertificateWarning, "the judge keeps the warning")
	answers := holds.judged()
	require.Len(t, answers, 1)
	a := answers[0]
	assert.Equal(t, probing.KindGRPC, a.Kind)
	assert.Equal(t, &probing.GRPCAnswer{Status: "SERVING"}, a.GRPC)
	assert.Positive(t, a.Latency)
	assert.LessOrEqual(t, a.Latency, res.Duration)
	require.NotNil(t, a.TLS)
	assert.Equal(t, "1.3", a.TLS.Version)
	assert.Equal(t, []string{"healthy.test"}, a.TLS.DNSNames)
	assert.Equal(t, cert.X509.NotAfter, a.TLS.Expiry)
	assert.Nil(t, a.HTTP)

	fails := &recordingJudge{}
	res = probe(t.Context(), prober, target(fails))
	assert.Equal(t, probing.ReasonConditionFailed, res.Reason, "%+v", res)
	assert.Equal(t, "condition on grpc.status SERVING failed", res.Message)
	assert.NotNil(t, res.CertificateExpiry)
	assert.Empty(t, res.CertificateWarning)

	// The kind's own check fails first: the judge is not asked.
	srv.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	res = probe(t.Context(), prober, target(fails))
	assert.Equal(t, probing.ReasonNotServing, res.Reason, "%+v", res)
	assert.Len(t, fails.judged(), 1)
}

func TestGRPCProberInvalidTarget(t *testing.T) {
	t.Parallel()
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	direct := probing.NewGRPCProber(probing.ProberOptions{})
	tests := map[string]struct {
		prober      probing.Prober
		target      probing.TargetSpec
		wantMessage string
	}{
		"HTTP options": {
			prober:      prober,
			target:      probing.TargetSpec{URL: "grpc://127.0.0.1:1", Method: http.MethodGet, Timeout: time.Second},
			wantMessage: "invalid target: HTTP options on a grpc target",
		},
		"no timeout": {
			prober:      prober,
			target:      probing.TargetSpec{URL: "grpc://127.0.0.1:1"},
			wantMessage: "invalid target: timeout 0s is not positive",
		},
		"no port": {
			prober:      prober,
			target:      probing.TargetSpec{URL: "grpcs://healthy.test", Timeout: time.Second},
			wantMessage: `invalid target: URL "grpcs://healthy.test": missing or invalid port (a grpcs URL has no default port)`,
		},
		"another kind": {
			prober:      direct,
			target:      probing.TargetSpec{URL: "tcp://127.0.0.1:1", Timeout: time.Second},
			wantMessage: "invalid target: the gRPC prober cannot probe tcp targets",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := probe(t.Context(), tc.prober, tc.target)
			assert.Equal(t, probing.ReasonInvalidTarget, res.Reason, "%+v", res)
			assert.Equal(t, tc.wantMessage, res.Message)
		})
	}
}

// grpcGoroutines counts the goroutines running gRPC code.
func grpcGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "google.golang.org/grpc") {
			count++
		}
	}
	return count
}

// TestGRPCProberNoGoroutineLeak probes successful and failing targets and
// checks that no gRPC goroutine outlives its probe and server. It does not
// run in parallel: the other gRPC tests would be counted.
func TestGRPCProberNoGoroutineLeak(t *testing.T) {
	before := grpcGoroutines()
	func() {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cert := probetest.NewCertificate(t, "healthy.test", time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&cert.TLS)))
		healthpb.RegisterHealthServer(srv, health.NewServer())
		var wg sync.WaitGroup
		wg.Go(func() { _ = srv.Serve(ln) })
		defer func() {
			srv.Stop()
			wg.Wait()
		}()
		prober := probing.NewProber(probing.ProberOptions{DNSServer: "127.0.0.1:1"})
		secure := grpcTarget("grpcs://"+ln.Addr().String(), "")
		secure.TLS.RootCAs = cert.PEM
		untrusted := grpcTarget("grpcs://"+ln.Addr().String(), "")
		short := grpcTarget("grpc://"+ln.Addr().String(), "")
		short.Timeout = 200 * time.Millisecond // a TLS server does not speak plaintext HTTP/2
		for range 3 {
			assert.True(t, probe(ctx, prober, secure).Success)
			assert.Equal(t, probing.ReasonTLSError, probe(ctx, prober, untrusted).Reason)
			assert.False(t, probe(ctx, prober, short).Success)
		}
	}()
	deadline := time.Now().Add(relaxedTimeout)
	for grpcGoroutines() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, grpcGoroutines(), before, "gRPC goroutines left behind")
}
