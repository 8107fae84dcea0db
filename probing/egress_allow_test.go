package probing_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

// A target's EgressAllow opens the default denial of loopback for its own
// connections only, for every kind of probe, and a connection kept alive
// for a target with an allowance is never reused for one without.
func TestTargetEgressAllow(t *testing.T) {
	t.Parallel()
	dns := newDNS(t)
	prober := newKindProber(t, dns, probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{})})
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

	plain := startServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(tlsSrv.Close)
	banner := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	grpcSrv := startGRPC(t, grpcServerOptions{})
	zone := newZone(t)

	targets := map[string]probing.TargetSpec{
		"http":            {URL: plain.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout},
		"http reused":     {URL: plain.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout, ReuseConnections: true},
		"https reused":    {URL: tlsSrv.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout, ReuseConnections: true, TLS: probing.TLSOptions{InsecureSkipVerify: true}},
		"tcp":             {URL: "tcp://" + net.JoinHostPort("127.0.0.1", banner.Port()), Timeout: relaxedTimeout},
		"grpc":            grpcTarget("grpc://"+grpcSrv.addr, ""),
		"dns over udp":    dnsTarget(zone.Addr(), probing.DNSOptions{Name: "a.test", Type: "A", Transport: "udp"}),
		"dns over tcp":    dnsTarget(zone.Addr(), probing.DNSOptions{Name: "a.test", Type: "A", Transport: "tcp"}),
		"http by a proxy": {URL: plain.URL + "/", Method: http.MethodGet, Timeout: relaxedTimeout, Proxy: &probing.Proxy{URL: probetest.NewTestProxy(t, probetest.ProxyOptions{}).URL()}},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			allowed := target
			allowed.EgressAllow = allow
			assert.False(t, mustTarget(t, target).Equal(mustTarget(t, allowed)), "the allowance is part of the target")
			for range 2 { // the second allowed probe may reuse a connection
				res := probe(t.Context(), prober, allowed)
				require.True(t, res.Success, "allowed: %+v", res)
				res = probe(t.Context(), prober, target)
				assert.Equal(t, probing.ReasonEgressDenied, res.Reason, "not allowed: %+v", res)
				assert.Contains(t, res.Message, "egress to 127.0.0.1 denied: loopback (default)")
			}
		})
	}
}
