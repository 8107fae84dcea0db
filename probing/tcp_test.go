package probing_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/pattern"
	"github.com/networkio/webchecker/probing/probetest"
)

// The tests of the tcp and tls probe kinds, through probing.NewProber.
// Every server is a probetest.BannerServer (or a raw listener) on
// loopback, and names are resolved by a probetest.DNSServer.

// newKindTestProber returns a KindProber whose resolver asks dns.
func newKindTestProber(t *testing.T, dns *probetest.DNSServer, opts probing.ProberOptions) *probing.KindProber {
	t.Helper()
	opts.DNSServer = dns.Addr()
	p := probing.NewProber(opts)
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// tcpURL returns scheme://host:port for srv.
func tcpURL(scheme, host string, srv *probetest.BannerServer) string {
	return scheme + "://" + net.JoinHostPort(host, srv.Port())
}

// tcpCase is a probe of a tcp or tls target and what it must give.
type tcpCase struct {
	target      probing.TargetSpec
	wantReason  probing.Reason
	wantMessage string // exact, when set
	wantContain string // when set
}

// runTCPCases probes every case twice, in parallel with the others, and
// checks the result and that it is stable.
func runTCPCases(t *testing.T, prober probing.Prober, cases map[string]tcpCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.target.Timeout == 0 {
				tc.target.Timeout = relaxedTimeout
			}
			res := probe(t.Context(), prober, tc.target)
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			assert.Equal(t, tc.wantReason == probing.ReasonSucceeded, res.Success, "%+v", res)
			switch {
			case tc.wantReason == probing.ReasonSucceeded:
				assert.Equal(t, probing.ReadyMessage, res.Message)
			case tc.wantMessage != "":
				assert.Equal(t, tc.wantMessage, res.Message)
			case tc.wantContain != "":
				assert.Contains(t, res.Message, tc.wantContain)
			}
			assert.Positive(t, res.Duration)
			assert.NotRegexp(t, `:\d+->`, res.Message, "no ephemeral port")
			again := probe(t.Context(), prober, tc.target)
			assert.True(t, res.SameOutcome(again), "stable outcome:\n%+v\n%+v", res, again)
		})
	}
}

// expectReply returns TCPOptions that send send and expect expr.
func expectReply(send, expr string, maxBytes int64) *probing.TCPOptions {
	return &probing.TCPOptions{Send: send, Expect: pattern.MustCompile(expr), MaxBytes: maxBytes}
}

// resetAfterQuery returns the tcp URL of a server that reads a query,
// then resets the connection.
func resetAfterQuery(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) {
		_, _ = c.Read(make([]byte, 64))
		_ = c.(*net.TCPConn).SetLinger(0) // close with RST
	})
	return "tcp://" + ln.Addr().String()
}

// tcpConnectionFailures are the cases of TestTCPProber that fail before
// any server answers: a closed port, a reset (which, like a close, leaves
// the reply unmatched), names that do not resolve
// on the DNS server at dnsAddr.
func tcpConnectionFailures(t *testing.T, dnsAddr string) map[string]tcpCase {
	t.Helper()
	refused := "tcp://" + closedPort(t)
	reset := resetAfterQuery(t)
	return map[string]tcpCase{
		"connection refused": {
			target:      probing.TargetSpec{URL: refused},
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: `connect "` + refused + `": dial tcp ` + strings.TrimPrefix(refused, "tcp://") + `: connect: connection refused`,
		},
		"connection reset while reading: as a close (timing tells them apart)": {
			target:      probing.TargetSpec{URL: reset, TCP: expectReply("PING\r\n", `^\+PONG`, 1024)},
			wantReason:  probing.ReasonUnexpectedReply,
			wantMessage: `read "` + reset + `": reply does not match "^\\+PONG": the server closed the connection`,
		},
		"unknown name": {
			target:      probing.TargetSpec{URL: "tcp://nowhere.test:25"},
			wantReason:  probing.ReasonDNSFailed,
			wantMessage: `connect "tcp://nowhere.test:25": dial tcp: lookup nowhere.test on ` + dnsAddr + `: no such host`,
		},
		"unknown name, tls": {
			target:      probing.TargetSpec{URL: "tls://nowhere.test:465"},
			wantReason:  probing.ReasonDNSFailed,
			wantMessage: `connect "tls://nowhere.test:465": dial tcp: lookup nowhere.test on ` + dnsAddr + `: no such host`,
		},
	}
}

func TestTCPProber(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newKindTestProber(t, dns, probing.ProberOptions{})

	silent := probetest.NewTestBannerServer(t, probetest.BannerOptions{})
	smtp := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	redis := probetest.NewTestBannerServer(t, probetest.BannerOptions{Query: "PING\r\n", Reply: "+PONG\r\n"})
	goAway := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "-ERR go away\r\n", Close: true})
	hangUp := probetest.NewTestBannerServer(t, probetest.BannerOptions{Close: true})
	chatty := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: strings.Repeat("chatter ", 100)})
	failures := tcpConnectionFailures(t, dns.Addr())

	runTCPCases(t, prober, map[string]tcpCase{
		"connects by name": {
			target: probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", silent)}, wantReason: probing.ReasonSucceeded,
		},
		"IPv4 only": {
			target: probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", silent), IPFamily: probing.IPFamilyIPv4}, wantReason: probing.ReasonSucceeded,
		},
		"IPv6 only, to a name without an IPv6 address": {
			target:      probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", silent), IPFamily: probing.IPFamilyIPv6},
			wantReason:  probing.ReasonDNSFailed,
			wantContain: `connect "tcp://healthy.test:` + silent.Port() + `": dial tcp6: lookup healthy.test`,
		},
		"connects by address": {
			target: probing.TargetSpec{URL: tcpURL("tcp", "127.0.0.1", silent)}, wantReason: probing.ReasonSucceeded,
		},
		"sends without expecting": {
			target:     probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", silent), TCP: &probing.TCPOptions{Send: "hello\r\n", MaxBytes: 1}},
			wantReason: probing.ReasonSucceeded,
		},
		"banner": {
			target:     probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", smtp), TCP: expectReply("", `^220 `, 1024)},
			wantReason: probing.ReasonSucceeded,
		},
		"query and reply": {
			target:     probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", redis), TCP: expectReply("PING\r\n", `^\+PONG`, 1024)},
			wantReason: probing.ReasonSucceeded,
		},
		"a server that hangs up matches an expression of the empty reply": {
			target:     probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", hangUp), TCP: expectReply("", `^$`, 1024)},
			wantReason: probing.ReasonSucceeded,
		},
		"reply mismatch: the server closed the connection": {
			target:      probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", goAway), TCP: expectReply("", `^220 `, 1024)},
			wantReason:  probing.ReasonUnexpectedReply,
			wantMessage: `read "tcp://healthy.test:` + goAway.Port() + `": reply does not match "^220 ": the server closed the connection`,
		},
		"reply mismatch: the server hung up without a word": {
			target:      probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", hangUp), TCP: expectReply("", `^220 `, 1024)},
			wantReason:  probing.ReasonUnexpectedReply,
			wantMessage: `read "tcp://healthy.test:` + hangUp.Port() + `": reply does not match "^220 ": the server closed the connection`,
		},
		"reply mismatch: read limit": {
			target:      probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", chatty), TCP: expectReply("", `ready`, 16)},
			wantReason:  probing.ReasonUnexpectedReply,
			wantMessage: `read "tcp://healthy.test:` + chatty.Port() + `": reply does not match "ready" within its first 16 bytes`,
		},
		"a match within the read limit": {
			target:     probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", chatty), TCP: expectReply("", `^chatter chatter`, 16)},
			wantReason: probing.ReasonSucceeded,
		},
	})
	runTCPCases(t, prober, failures)
}

// What a tcp probe sends reaches the server as it is.
func TestTCPProberSends(t *testing.T) {
	t.Parallel()
	prober := newKindTestProber(t, newDNS(t), probing.ProberOptions{})
	srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{Query: "PING\r\n", Reply: "+PONG\r\n"})
	res := probe(t.Context(), prober, probing.TargetSpec{
		URL: tcpURL("tcp", "healthy.test", srv), Timeout: relaxedTimeout, TCP: expectReply("PING\r\n", `^\+PONG\r\n`, 64),
	})
	require.True(t, res.Success, "%+v", res)
	assert.Equal(t, "PING\r\n", string(srv.Received()))
}

// The probe's timeout bounds every step; a probe that times out says in
// which step, and returns soon after its timeout.
func TestTCPProberTimeout(t *testing.T) {
	t.Parallel()
	prober := newKindTestProber(t, newDNS(t), probing.ProberOptions{})
	silent := probetest.NewTestBannerServer(t, probetest.BannerOptions{})
	const timeout = 300 * time.Millisecond

	tests := map[string]struct {
		target      probing.TargetSpec
		wantMessage string
	}{
		"waiting for the reply": {
			target:      probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", silent), TCP: expectReply("PING\r\n", `^\+PONG`, 1024)},
			wantMessage: `read "tcp://healthy.test:` + silent.Port() + `": timeout after 300ms`,
		},
		"waiting for the handshake": {
			target:      probing.TargetSpec{URL: tcpURL("tls", "healthy.test", silent)},
			wantMessage: `handshake "tls://healthy.test:` + silent.Port() + `": timeout after 300ms`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.target.Timeout = timeout
			res := probe(t.Context(), prober, tc.target)
			assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
			assert.Equal(t, tc.wantMessage, res.Message)
			assert.GreaterOrEqual(t, res.Duration, timeout)
			assert.Less(t, res.Duration, timeout+slack)
			again := probe(t.Context(), prober, tc.target)
			assert.True(t, res.SameOutcome(again), "%+v\n%+v", res, again)
		})
	}
}

// A probe whose caller gives up returns at once, and says so.
func TestTCPProberCancelled(t *testing.T) {
	t.Parallel()
	prober := newKindTestProber(t, newDNS(t), probing.ProberOptions{})
	for _, scheme := range []string{"tcp", "tls"} {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			silent := probetest.NewTestBannerServer(t, probetest.BannerOptions{})
			target := probing.TargetSpec{URL: tcpURL(scheme, "healthy.test", silent), Timeout: time.Minute}
			if scheme == "tcp" {
				target.TCP = expectReply("", `^220 `, 1024)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan probing.Result, 1)
			go func() { done <- probe(ctx, prober, target) }()
			require.Eventually(t, func() bool { return silent.Accepted() > 0 }, relaxedTimeout, 10*time.Millisecond)
			cancel()
			select {
			case res := <-done:
				assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
				assert.Contains(t, res.Message, "probe cancelled: context canceled")
				assert.Regexp(t, `^(read|handshake) "`+scheme+`://healthy.test:`, res.Message)
			case <-time.After(relaxedTimeout):
				t.Fatal("the probe did not return after its caller cancelled it")
			}
			require.Eventually(t, func() bool { return silent.Open() == 0 }, relaxedTimeout, 10*time.Millisecond,
				"the probe's connection is closed")
		})
	}
}

// The egress policy judges the address every tcp and tls probe connects
// to, after resolution.
func TestTCPProberEgressDenied(t *testing.T) {
	t.Parallel()
	dns := probetest.NewTestDNSServer(t, map[string][]net.IP{"denied.test": {net.ParseIP(deniedAddr)}})
	prefixes, err := egress.ParseCIDRs([]string{deniedAddr + "/32"})
	require.NoError(t, err)
	prober := newKindTestProber(t, dns, probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{Deny: prefixes, Allow: loopbackOne})})
	srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{IP: deniedAddr, Banner: "220 ready\r\n"})
	addr := net.JoinHostPort(deniedAddr, srv.Port())

	runTCPCases(t, prober, map[string]tcpCase{
		"by address": {
			target:      probing.TargetSpec{URL: "tcp://" + addr, TCP: expectReply("", `^220`, 64)},
			wantReason:  probing.ReasonEgressDenied,
			wantMessage: `connect "tcp://` + addr + `": dial tcp ` + addr + `: egress to 127.0.0.2 denied: denied range 127.0.0.2/32 (--deny-cidrs)`,
		},
		"by name": {
			target:      probing.TargetSpec{URL: tcpURL("tcp", "denied.test", srv)},
			wantReason:  probing.ReasonEgressDenied,
			wantMessage: `connect "tcp://denied.test:` + srv.Port() + `": dial tcp denied.test:` + srv.Port() + `: egress to 127.0.0.2 denied: denied range 127.0.0.2/32 (--deny-cidrs)`,
		},
		"tls by name": {
			target:      probing.TargetSpec{URL: tcpURL("tls", "denied.test", srv)},
			wantReason:  probing.ReasonEgressDenied,
			wantContain: `connect "tls://denied.test:` + srv.Port() + `": dial tcp denied.test:` + srv.Port() + `: egress to 127.0.0.2 denied: `,
		},
	})
	t.Cleanup(func() { assert.Zero(t, srv.Accepted(), "a denied server was reached") })
}

// tlsServers are the servers of the tls tests: healthy.test's
// certificate is valid for 90 days, soon.test's for an hour, and
// other.test's is valid for other.test only, but served at healthy.test.
type tlsServers struct {
	valid, soon, other       probetest.Certificate
	trusted, expiring, wrong *probetest.BannerServer
	redis, plain             *probetest.BannerServer
}

func startTLSServers(t *testing.T) tlsServers {
	t.Helper()
	now := time.Now()
	var s tlsServers
	s.valid = probetest.NewCertificate(t, "healthy.test", now.Add(-time.Hour), now.Add(90*24*time.Hour))
	s.soon = probetest.NewCertificate(t, "healthy.test", now.Add(-time.Hour), now.Add(time.Hour))
	s.other = probetest.NewCertificate(t, "other.test", now.Add(-time.Hour), now.Add(90*24*time.Hour))
	s.trusted = probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &s.valid.TLS})
	s.expiring = probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &s.soon.TLS, Banner: "220 ready\r\n"})
	s.wrong = probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &s.other.TLS})
	s.redis = probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &s.valid.TLS, Query: "PING\r\n", Reply: "+PONG\r\n"})
	s.plain = probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	return s
}

func TestTLSProber(t *testing.T) {
	t.Parallel()
	prober := newKindTestProber(t, newDNS(t), probing.ProberOptions{})
	s := startTLSServers(t)
	trust := func(c probetest.Certificate) probing.TLSOptions { return probing.TLSOptions{RootCAs: c.PEM} }

	runTCPCases(t, prober, map[string]tcpCase{
		"trusted certificate, by name": {
			target: probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.trusted), TLS: trust(s.valid)}, wantReason: probing.ReasonSucceeded,
		},
		"trusted certificate, by address": {
			target: probing.TargetSpec{URL: tcpURL("tls", "127.0.0.1", s.trusted), TLS: trust(s.valid)}, wantReason: probing.ReasonSucceeded,
		},
		"query and reply over TLS": {
			target:     probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.redis), TLS: trust(s.valid), TCP: expectReply("PING\r\n", `^\+PONG`, 64)},
			wantReason: probing.ReasonSucceeded,
		},
		"reply mismatch over TLS": {
			target:      probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.expiring), TLS: trust(s.soon), TCP: expectReply("", `^\+PONG`, 8)},
			wantReason:  probing.ReasonUnexpectedReply,
			wantMessage: `read "tls://healthy.test:` + s.expiring.Port() + `": reply does not match "^\\+PONG" within its first 8 bytes`,
		},
		"ServerName verified instead of the host name": {
			target:     probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.wrong), TLS: probing.TLSOptions{RootCAs: s.other.PEM, ServerName: "other.test"}},
			wantReason: probing.ReasonSucceeded,
		},
		"InsecureSkipVerify": {
			target:     probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.wrong), TLS: probing.TLSOptions{InsecureSkipVerify: true}},
			wantReason: probing.ReasonSucceeded,
		},
		"untrusted certificate": {
			target:      probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.trusted)},
			wantReason:  probing.ReasonTLSError,
			wantMessage: `handshake "tls://healthy.test:` + s.trusted.Port() + `": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
		},
		"certificate of another name": {
			target:      probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.wrong), TLS: trust(s.other)},
			wantReason:  probing.ReasonTLSError,
			wantContain: `handshake "tls://healthy.test:` + s.wrong.Port() + `": tls: failed to verify certificate: x509: certificate is not valid for "healthy.test"`,
		},
		"a server that does not speak TLS": {
			target:      probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.plain)},
			wantReason:  probing.ReasonTLSError,
			wantContain: `handshake "tls://healthy.test:` + s.plain.Port() + `": tls: `,
		},
	})
}

// A tls probe reports the certificate's expiry as the HTTP prober does:
// on success and on a reply mismatch (the server answered), with a
// warning on success only.
func TestTLSProberCertificateExpiry(t *testing.T) {
	t.Parallel()
	prober := newKindTestProber(t, newDNS(t), probing.ProberOptions{})
	s := startTLSServers(t)
	const day = 24 * time.Hour

	target := probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.expiring), Timeout: relaxedTimeout,
		TLS: probing.TLSOptions{RootCAs: s.soon.PEM}, CertExpiryWarning: day, TCP: expectReply("", `^220 `, 64)}
	res := probe(t.Context(), prober, target)
	require.True(t, res.Success, "%+v", res)
	require.NotNil(t, res.CertificateExpiry)
	assert.True(t, res.CertificateExpiry.Equal(s.soon.X509.NotAfter), "%v", res.CertificateExpiry)
	assert.Equal(t, `the server's certificate expires at `+s.soon.X509.NotAfter.UTC().Format(time.RFC3339)+`, in less than 24h0m0s`,
		res.CertificateWarning)

	noWarning := target
	noWarning.CertExpiryWarning = 0
	res = probe(t.Context(), prober, noWarning)
	assert.True(t, res.Success, "%+v", res)
	assert.Empty(t, res.CertificateWarning)
	assert.NotNil(t, res.CertificateExpiry)

	mismatch := target
	mismatch.TCP = expectReply("", `^\+PONG`, 8)
	res = probe(t.Context(), prober, mismatch)
	assert.Equal(t, probing.ReasonUnexpectedReply, res.Reason, "%+v", res)
	assert.Empty(t, res.CertificateWarning)
	require.NotNil(t, res.CertificateExpiry)
	assert.True(t, res.CertificateExpiry.Equal(s.soon.X509.NotAfter))

	res = probe(t.Context(), prober, probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", s.plain), Timeout: relaxedTimeout, CertExpiryWarning: day})
	assert.True(t, res.Success, "%+v", res)
	assert.Nil(t, res.CertificateExpiry, "no certificate without TLS")

	expired := probetest.NewCertificate(t, "healthy.test", time.Now().Add(-2*day), time.Now().Add(-day))
	srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &expired.TLS})
	res = probe(t.Context(), prober, probing.TargetSpec{URL: tcpURL("tls", "healthy.test", srv), Timeout: relaxedTimeout,
		TLS: probing.TLSOptions{RootCAs: expired.PEM}})
	assert.Equal(t, probing.ReasonTLSError, res.Reason, "%+v", res)
	assert.Contains(t, res.Message, "x509: the server's certificate expired at "+expired.X509.NotAfter.UTC().Format(time.RFC3339)+" (1 day ago)")
	assert.NotContains(t, res.Message, "current time", "stable message")
	require.NotNil(t, res.CertificateExpiry, "a certificate that failed verification still has an expiry")
	assert.True(t, res.CertificateExpiry.Equal(expired.X509.NotAfter))
	res = probe(t.Context(), prober, probing.TargetSpec{URL: tcpURL("tls", "healthy.test", srv), Timeout: relaxedTimeout,
		TLS: probing.TLSOptions{InsecureSkipVerify: true}, CertExpiryWarning: day})
	assert.True(t, res.Success, "%+v", res)
	assert.Equal(t, `the server's certificate expired at `+expired.X509.NotAfter.UTC().Format(time.RFC3339), res.CertificateWarning)
}

// replyJudge is a Judge that holds when the reply contains want and the
// certificate (if any) lasts at least a day. It keeps the last Answer.
type replyJudge struct {
	want string
	last atomic.Pointer[probing.Answer]
}

func (j *replyJudge) Judge(_ context.Context, a *probing.Answer) (bool, string) {
	j.last.Store(a)
	if a.TCP == nil || !bytes.Contains(a.TCP.Reply, []byte(j.want)) {
		return false, fmt.Sprintf("reply does not contain %q", j.want)
	}
	if a.TLS != nil && time.Until(a.TLS.Expiry) < 24*time.Hour {
		return false, "certificate expires within a day"
	}
	return true, ""
}

func (j *replyJudge) Source() string  { return "reply contains " + j.want }
func (j *replyJudge) NeedsBody() bool { return true }

func TestTCPProberJudge(t *testing.T) {
	t.Parallel()
	prober := newKindTestProber(t, newDNS(t), probing.ProberOptions{})
	s := startTLSServers(t)
	probe := func(target probing.TargetSpec, j *replyJudge) (probing.Result, *probing.Answer) {
		target.Timeout, target.Judge = relaxedTimeout, j
		res := probe(t.Context(), prober, target)
		return res, j.last.Load()
	}

	j := &replyJudge{want: "ready"}
	res, a := probe(probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", s.plain), TCP: expectReply("", `^220`, 64)}, j)
	assert.True(t, res.Success, "%+v", res)
	require.NotNil(t, a)
	assert.Equal(t, probing.KindTCP, a.Kind)
	assert.Equal(t, "220 ready\r\n", string(a.TCP.Reply))
	assert.Nil(t, a.TLS)
	assert.Positive(t, a.Latency)

	res, _ = probe(probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", s.plain), TCP: expectReply("", `^220`, 64)}, &replyJudge{want: "busy"})
	assert.Equal(t, probing.ReasonConditionFailed, res.Reason, "%+v", res)
	assert.Equal(t, `reply does not contain "busy"`, res.Message)

	// Without Expect nothing is read, so a Judge sees an empty reply.
	j = &replyJudge{want: "ready"}
	res, a = probe(probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", s.plain)}, j)
	assert.Equal(t, probing.ReasonConditionFailed, res.Reason, "%+v", res)
	require.NotNil(t, a)
	assert.Empty(t, a.TCP.Reply)

	j = &replyJudge{want: "+PONG"}
	res, a = probe(probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.redis), TLS: probing.TLSOptions{RootCAs: s.valid.PEM},
		TCP: expectReply("PING\r\n", `PONG`, 64)}, j)
	assert.True(t, res.Success, "%+v", res)
	require.NotNil(t, a)
	require.NotNil(t, a.TLS)
	assert.Equal(t, probing.KindTLS, a.Kind)
	assert.True(t, a.TLS.Expiry.Equal(s.valid.X509.NotAfter))
	assert.Equal(t, "1.3", a.TLS.Version)
	assert.Equal(t, "CN=healthy.test", a.TLS.Subject)
	assert.Equal(t, []string{"healthy.test"}, a.TLS.DNSNames)

	// A failed condition clears the certificate warning, not the expiry.
	res, a = probe(probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.expiring), TLS: probing.TLSOptions{RootCAs: s.soon.PEM},
		TCP: expectReply("", `^220`, 64), CertExpiryWarning: 24 * time.Hour}, &replyJudge{want: "ready"})
	assert.Equal(t, probing.ReasonConditionFailed, res.Reason, "%+v", res)
	assert.Equal(t, "certificate expires within a day", res.Message)
	assert.Empty(t, res.CertificateWarning)
	assert.NotNil(t, res.CertificateExpiry)
	require.NotNil(t, a)
	assert.True(t, a.TLS.Expiry.Equal(s.soon.X509.NotAfter))
}

// A target that cannot be probed is not built, so not probed: no
// connection is made.
func TestTCPProberInvalidTarget(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	url := tcpURL("tcp", "healthy.test", srv)

	tests := map[string]struct {
		target      probing.TargetSpec
		wantMessage string
	}{
		"HTTP method on a tcp target": {
			target:      probing.TargetSpec{URL: url, Method: "GET", Timeout: relaxedTimeout},
			wantMessage: "invalid target: HTTP options on a tcp target",
		},
		"body match on a tls target": {
			target:      probing.TargetSpec{URL: tcpURL("tls", "healthy.test", srv), Timeout: relaxedTimeout, BodyMatch: &probing.BodyMatch{Regexp: pattern.MustCompile("x"), MaxBytes: 1}},
			wantMessage: "invalid target: HTTP options on a tls target",
		},
		"no timeout": {
			target:      probing.TargetSpec{URL: url},
			wantMessage: "invalid target: timeout 0s is not positive",
		},
		"read limit out of range": {
			target:      probing.TargetSpec{URL: url, Timeout: relaxedTimeout, TCP: expectReply("", "220", 0)},
			wantMessage: "invalid target: tcp: maxBodyBytes 0 is not between 1 and 1048576",
		},
		"no port": {
			target:      probing.TargetSpec{URL: "tcp://healthy.test", Timeout: relaxedTimeout},
			wantMessage: `invalid target: URL "tcp://healthy.test": missing or invalid port (a tcp URL has no default port)`,
		},
		"a path": {
			target:      probing.TargetSpec{URL: url + "/x", Timeout: relaxedTimeout},
			wantMessage: `invalid target: URL "` + url + `/x": a tcp URL has no path, query or fragment`,
		},
		"a CA bundle without certificates": {
			target:      probing.TargetSpec{URL: tcpURL("tls", "healthy.test", srv), Timeout: relaxedTimeout, TLS: probing.TLSOptions{RootCAs: []byte("not PEM")}},
			wantMessage: "invalid target: TLS settings: the CA bundle holds no PEM-encoded certificate",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := probing.NewTarget(tc.target)
			assert.EqualError(t, err, tc.wantMessage)
		})
	}
	// Nor is a target of another kind, which NewTarget builds.
	res := probing.NewTCPProber(probing.ProberOptions{}).Probe(t.Context(), mustTarget(t, probing.TargetSpec{URL: "dns://127.0.0.1", Timeout: time.Second,
		DNS: &probing.DNSOptions{Name: "a.test", Type: "A", Transport: "udp"}}))
	assert.Equal(t, probing.ReasonInvalidTarget, res.Reason)
	assert.Equal(t, "invalid target: the TCP prober cannot probe dns targets", res.Message)
	assert.Positive(t, res.Duration)
	t.Cleanup(func() { assert.Zero(t, srv.Accepted(), "an invalid target was probed") })
}

// Every probe closes its connection, however it ended.
func TestTCPProberClosesConnections(t *testing.T) {
	t.Parallel()
	prober := newKindTestProber(t, newDNS(t), probing.ProberOptions{})
	s := startTLSServers(t)
	silent := probetest.NewTestBannerServer(t, probetest.BannerOptions{})

	tests := map[string]struct {
		srv        *probetest.BannerServer
		target     probing.TargetSpec
		wantReason probing.Reason
	}{
		"tcp success": {
			srv: s.plain, target: probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", s.plain), TCP: expectReply("", "^220", 64)},
			wantReason: probing.ReasonSucceeded,
		},
		"tcp reply mismatch": {
			srv: s.plain, target: probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", s.plain), TCP: expectReply("", "^500", 4)},
			wantReason: probing.ReasonUnexpectedReply,
		},
		"tcp timeout": {
			srv: silent, target: probing.TargetSpec{URL: tcpURL("tcp", "healthy.test", silent), TCP: expectReply("", "^220", 64), Timeout: 200 * time.Millisecond},
			wantReason: probing.ReasonTimeout,
		},
		"tls success": {
			srv: s.trusted, target: probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.trusted), TLS: probing.TLSOptions{RootCAs: s.valid.PEM}},
			wantReason: probing.ReasonSucceeded,
		},
		"tls untrusted": {
			srv: s.trusted, target: probing.TargetSpec{URL: tcpURL("tls", "healthy.test", s.trusted)},
			wantReason: probing.ReasonTLSError,
		},
		"tls handshake timeout": {
			srv: silent, target: probing.TargetSpec{URL: tcpURL("tls", "healthy.test", silent), Timeout: 200 * time.Millisecond},
			wantReason: probing.ReasonTimeout,
		},
	}
	for name, tc := range tests { // one at a time: they share servers
		t.Run(name, func(t *testing.T) {
			if tc.target.Timeout == 0 {
				tc.target.Timeout = relaxedTimeout
			}
			before := tc.srv.Accepted()
			res := probe(t.Context(), prober, tc.target)
			require.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			require.Equal(t, before+1, tc.srv.Accepted(), "one connection per probe")
			require.Eventually(t, func() bool { return tc.srv.Open() == 0 }, relaxedTimeout, 10*time.Millisecond,
				"the server still has a connection open")
		})
	}
}
