package probing_test

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestTargetDNSServerResolvesItsNames: a target's own DNS server
// (TargetSpec.DNSServer) resolves the names of its probes, of every kind,
// instead of the prober's: own.test is known only to the target's server,
// so each probe succeeds with it and fails its lookup without it.
func TestTargetDNSServerResolvesItsNames(t *testing.T) {
	t.Parallel()
	proberDNS := newDNS(t) // knows healthy.test only
	own := probetest.NewTestDNSServer(t, map[string][]net.IP{
		"own.test":    {net.IPv4(127, 0, 0, 1)},
		"ns.own.test": {net.IPv4(127, 0, 0, 1)},
	})
	prober := probing.NewProber(probing.ProberOptions{DNSServer: proberDNS.Addr()})
	t.Cleanup(prober.CloseIdleConnections)

	web := startServer(t, probeServer(t).Config.Handler)
	banner := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	grpc := startGRPC(t, grpcServerOptions{})
	_, webPort, _ := net.SplitHostPort(web.Listener.Addr().String())
	_, bannerPort, _ := net.SplitHostPort(banner.Addr())
	_, ownPort, _ := net.SplitHostPort(own.Addr())

	cases := map[string]probing.TargetSpec{
		"http": {URL: "http://own.test:" + webPort + "/ok", Method: "GET"},
		"tcp":  {URL: "tcp://own.test:" + bannerPort},
		"grpc": {URL: "grpc://own.test:" + grpc.port},
		// The server of a dns probe is a name its own DNS server resolves.
		"dns": {URL: "dns://ns.own.test:" + ownPort, DNS: &probing.DNSOptions{Name: "own.test", Type: "A", Transport: "udp"}},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec.Timeout = relaxedTimeout

			without := probe(context.Background(), prober, spec)
			assert.Equal(t, probing.ReasonDNSFailed, without.Reason, without.Message)
			assert.Contains(t, without.Message, "on "+proberDNS.Addr(), "the message names the server asked")

			spec.DNSServer = own.Addr()
			with := probe(context.Background(), prober, spec)
			assert.Equal(t, probing.ReasonSucceeded, with.Reason, with.Message)
		})
	}
}

// TestTargetDNSServerNamedInFailures: a lookup the target's own DNS
// server cannot answer names that server, not the prober's.
func TestTargetDNSServerNamedInFailures(t *testing.T) {
	t.Parallel()
	proberDNS := newDNS(t)
	own := probetest.NewTestDNSServer(t, map[string][]net.IP{})
	prober := probing.NewProber(probing.ProberOptions{DNSServer: proberDNS.Addr()})
	t.Cleanup(prober.CloseIdleConnections)

	res := probe(context.Background(), prober, probing.TargetSpec{
		URL: "tcp://healthy.test:1", Timeout: relaxedTimeout, DNSServer: own.Addr(),
	})
	assert.Equal(t, probing.ReasonDNSFailed, res.Reason, res.Message)
	assert.Contains(t, res.Message, "lookup healthy.test on "+own.Addr()+": no such host")
	assert.Positive(t, own.Queries())
}

// TestTargetDNSServerJudgedByEgress: the egress policy judges a target's
// own DNS server with the target's allowance: a denied one fails the
// probe with ReasonEgressDenied, naming the server, before any query or
// connection; the namespace's allowance lets it through.
func TestTargetDNSServerJudgedByEgress(t *testing.T) {
	t.Parallel()
	own := probetest.NewTestDNSServer(t, map[string][]net.IP{"own.test": {net.IPv4(127, 0, 0, 1)}})
	banner := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	_, bannerPort, _ := net.SplitHostPort(banner.Addr())
	// The policy denies loopback (a default) and allows only the banner's
	// port's address, 127.0.0.1, for the target's own connections: the
	// target's DNS server is asked at 127.0.0.1 too, so deny it by a
	// server address of its own, 127.0.0.2, where nothing listens.
	policy := egress.NewPolicy(egress.Options{Allow: loopbackOne})
	prober := probing.NewProber(probing.ProberOptions{Egress: policy})
	t.Cleanup(prober.CloseIdleConnections)

	denied := probing.TargetSpec{URL: "tcp://own.test:" + bannerPort, Timeout: relaxedTimeout, DNSServer: deniedAddr + ":53"}
	res := probe(context.Background(), prober, denied)
	assert.Equal(t, probing.ReasonEgressDenied, res.Reason, res.Message)
	assert.Contains(t, res.Message, "DNS server "+deniedAddr+":53: egress to "+deniedAddr+" denied")

	// Allowed by the policy (127.0.0.1 is the stub's address).
	allowed := denied
	allowed.DNSServer = own.Addr()
	res = probe(context.Background(), prober, allowed)
	assert.Equal(t, probing.ReasonSucceeded, res.Reason, res.Message)

	// A policy allowing nothing on loopback denies the stub, unless the
	// target's allowance (its namespace's) names it.
	strict := probing.NewProber(probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{})})
	t.Cleanup(strict.CloseIdleConnections)
	before := own.Queries()
	res = probe(context.Background(), strict, allowed)
	assert.Equal(t, probing.ReasonEgressDenied, res.Reason, res.Message)
	assert.Contains(t, res.Message, "DNS server "+own.Addr())
	assert.Equal(t, before, own.Queries(), "a denied DNS server is never asked")

	allowed.EgressAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	res = probe(context.Background(), strict, allowed)
	assert.Equal(t, probing.ReasonSucceeded, res.Reason, res.Message)
}

// TestTargetDNSServerAlsoJudgedAtDial: an HTTPProber used on its own
// (without the KindProber's check before the probe) still never asks a
// DNS server the egress policy denies: the resolver's connections are
// judged as the probe's are.
func TestTargetDNSServerAlsoJudgedAtDial(t *testing.T) {
	t.Parallel()
	own := probetest.NewTestDNSServer(t, map[string][]net.IP{"own.test": {net.IPv4(127, 0, 0, 1)}})
	prober := probing.NewHTTPProber(probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{})})
	t.Cleanup(prober.CloseIdleConnections)

	res := probe(context.Background(), prober, probing.TargetSpec{
		URL: "http://own.test:1/", Method: "GET", Timeout: relaxedTimeout, DNSServer: own.Addr(),
	})
	assert.Equal(t, probing.ReasonDNSFailed, res.Reason, res.Message)
	assert.Zero(t, own.Queries())
}

// TestTargetDNSServerMustBeAnAddress: NewTarget accepts only an IP
// address with a port as a target's DNS server.
func TestTargetDNSServerMustBeAnAddress(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"127.0.0.1:53":    true,
		"[::1]:5353":      true,
		"127.0.0.1":       false,
		"ns.example:53":   false,
		"127.0.0.1:0":     false,
		"[fe80::1%lo]:53": false,
		"127.0.0.1:99999": false,
		" 127.0.0.1:53":   false,
	}
	for server, ok := range cases {
		t.Run(server, func(t *testing.T) {
			t.Parallel()
			_, err := probing.NewTarget(probing.TargetSpec{URL: "tcp://healthy.test:1", Timeout: relaxedTimeout, DNSServer: server})
			if ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "is not an IP address and a port")
		})
	}
}
