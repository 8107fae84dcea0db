package probing_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/probetest"
)

// threeAddresses serves HTTP on 127.0.0.1 and 127.0.0.2 and refuses
// connections on 127.0.0.3, all on one port, behind the name multi.test
// of the DNS server it returns (with healthy.test, and one.test for
// 127.0.0.1 alone); every server records the Host it was asked for.
func threeAddresses(t *testing.T, tlsCert *probetest.Certificate) (dns *probetest.DNSServer, port string, hosts chan string) {
	t.Helper()
	port, listeners := probetest.SharedPort(t, []string{"127.0.0.1", "127.0.0.2"}, []string{"127.0.0.3"})
	hosts = make(chan string, 64)
	for _, ln := range listeners {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			select {
			case hosts <- r.Host:
			default:
			}
		}))
		_ = srv.Listener.Close()
		srv.Listener = ln
		if tlsCert != nil {
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{tlsCert.TLS}}
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
	}
	dns = probetest.NewTestDNSServer(t, map[string][]net.IP{
		"healthy.test": {net.IPv4(127, 0, 0, 1)},
		"one.test":     {net.IPv4(127, 0, 0, 1)},
		"multi.test":   {net.IPv4(127, 0, 0, 3), net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)},
		"dead.test":    {net.IPv4(127, 0, 0, 3)},
	})
	return dns, port, hosts
}

// TestAddressModes: a name resolving to 127.0.0.1, 127.0.0.2 and
// 127.0.0.3, the last one refusing connections, under each mode: First
// connects as a client does and succeeds on a live address; Any and
// Majority succeed naming the dead address; All fails naming it; each
// address's own result is in Result.Addresses, in address order.
func TestAddressModes(t *testing.T) {
	t.Parallel()
	dns, port, _ := threeAddresses(t, nil)
	prober := newKindProber(t, dns, probing.ProberOptions{})
	url := "http://multi.test:" + port + "/"
	refused := `127.0.0.3: Get "` + url + `": dial tcp multi.test:` + port + `: connect: connection refused`
	ok := probing.AddressResult{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}
	dead := probing.AddressResult{Reason: probing.ReasonConnectionFailed, Message: strings.TrimPrefix(refused, "127.0.0.3: ")}
	each := []probing.AddressResult{at(ok, "127.0.0.1"), at(ok, "127.0.0.2"), at(dead, "127.0.0.3")}

	cases := []struct {
		mode      probing.AddressMode
		success   bool
		reason    probing.Reason
		message   string
		addresses []probing.AddressResult
	}{
		{mode: probing.AddressesFirst, success: true, reason: probing.ReasonSucceeded, message: probing.ReadyMessage},
		{mode: probing.AddressesAny, success: true, reason: probing.ReasonSucceeded, message: probing.ReadyMessage + ": 1 of 3 addresses failing (" + refused + ")", addresses: each},
		{mode: probing.AddressesMajority, success: true, reason: probing.ReasonSucceeded, message: probing.ReadyMessage + ": 1 of 3 addresses failing (" + refused + ")", addresses: each},
		{mode: probing.AddressesAll, reason: probing.ReasonConnectionFailed, message: "1 of 3 addresses failing (" + refused + ")", addresses: each},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			res := probe(t.Context(), prober, probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: relaxedTimeout, Addresses: tc.mode})
			assert.Equal(t, tc.success, res.Success)
			assert.Equal(t, tc.reason, res.Reason)
			assert.Equal(t, tc.message, res.Message)
			assert.Equal(t, tc.addresses, withoutDurations(res.Addresses))
			assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}, res.ResolvedAddresses,
				"the name's addresses, whichever mode")
			if tc.success {
				assert.Equal(t, 200, res.StatusCode, "the status code of the address that decided")
			}
		})
	}
}

// TestAddressModesVerdicts: how many addresses must succeed in each mode,
// with one, two or three of the three addresses dead.
func TestAddressModesVerdicts(t *testing.T) {
	t.Parallel()
	dns, port, _ := threeAddresses(t, nil)
	// live.test: all three answer (127.0.0.1 and .2 serve; a second name
	// for .1 makes three live ones); the others lose one address more each.
	require.NoError(t, dns.SetRecords(map[string][]net.IP{
		"healthy.test": {net.IPv4(127, 0, 0, 1)},
		"two-of-two":   {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)},
		"two-of-three": {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 3)},
		"one-of-two":   {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 3)},
		"none-of-one":  {net.IPv4(127, 0, 0, 3)},
	}))
	prober := newKindProber(t, dns, probing.ProberOptions{})
	want := map[string]map[probing.AddressMode]bool{
		"two-of-two":   {probing.AddressesAny: true, probing.AddressesMajority: true, probing.AddressesAll: true},
		"two-of-three": {probing.AddressesAny: true, probing.AddressesMajority: true, probing.AddressesAll: false},
		"one-of-two":   {probing.AddressesAny: true, probing.AddressesMajority: false, probing.AddressesAll: false},
		"none-of-one":  {probing.AddressesAny: false, probing.AddressesMajority: false, probing.AddressesAll: false},
	}
	for name, modes := range want {
		for mode, success := range modes {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				res := probe(t.Context(), prober, probing.TargetSpec{URL: "tcp://" + name + ":" + port, Timeout: relaxedTimeout, Addresses: mode})
				assert.Equal(t, success, res.Success, res.Message)
				if name == "none-of-one" {
					assert.Equal(t, `1 of 1 address failing (127.0.0.3: connect "tcp://`+name+`:`+port+`": dial tcp `+name+`:`+port+`: connect: connection refused)`, res.Message)
				}
			})
		}
	}
}

// TestAddressesKeepTheName: a probe of one address still asks for the
// name: the HTTP Host and the TLS server name, verified against a
// certificate for multi.test only, are the name's, and every address is
// asked once.
func TestAddressesKeepTheName(t *testing.T) {
	t.Parallel()
	cert := probetest.CertificateTemplate{Name: "multi.test", NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}.Issue(t)
	dns, port, hosts := threeAddresses(t, &cert)
	prober := newKindProber(t, dns, probing.ProberOptions{})
	res := probe(t.Context(), prober, probing.TargetSpec{
		URL: "https://multi.test:" + port + "/", Method: http.MethodGet, Timeout: relaxedTimeout, Addresses: probing.AddressesAny,
		TLS: probing.TLSOptions{RootCAs: cert.PEM},
	})
	require.True(t, res.Success, res.Message)
	require.Len(t, res.Addresses, 3)
	assert.True(t, res.Addresses[0].Success, res.Addresses[0].Message)
	assert.True(t, res.Addresses[1].Success, res.Addresses[1].Message)
	assert.Equal(t, probing.ReasonConnectionFailed, res.Addresses[2].Reason)
	require.NotNil(t, res.CertificateExpiry)
	assert.Equal(t, []string{"multi.test:" + port, "multi.test:" + port}, []string{<-hosts, <-hosts})
}

// TestAddressesFailures: a name that does not resolve fails before any
// connection, with DNSFailed; the egress policy judges every address on
// its own; more than MaxAddresses addresses are cut to the lowest
// MaxAddresses.
func TestAddressesFailures(t *testing.T) {
	t.Parallel()
	dns, port, _ := threeAddresses(t, nil)
	var many []net.IP
	for i := range probing.MaxAddresses + 4 {
		many = append(many, net.IPv4(127, 0, 1, byte(40-i))) // none listens: all refused
	}
	require.NoError(t, dns.SetRecords(map[string][]net.IP{
		"healthy.test": {net.IPv4(127, 0, 0, 1)},
		"multi.test":   {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 3)},
		"many.test":    many,
	}))

	t.Run("no such name", func(t *testing.T) {
		t.Parallel()
		prober := newKindProber(t, dns, probing.ProberOptions{})
		res := probe(t.Context(), prober, probing.TargetSpec{URL: "http://nothing.test:" + port + "/", Method: http.MethodGet, Timeout: relaxedTimeout, Addresses: probing.AddressesAll})
		assert.Equal(t, probing.ReasonDNSFailed, res.Reason)
		assert.Equal(t, `resolve "nothing.test": lookup nothing.test on `+dns.Addr()+`: no such host`, res.Message)
		assert.Nil(t, res.Addresses)
	})
	t.Run("egress per address", func(t *testing.T) {
		t.Parallel()
		policy := egress.NewPolicy(egress.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("127.0.0.3/32")}})
		prober := newKindProber(t, dns, probing.ProberOptions{Egress: policy})
		res := probe(t.Context(), prober, probing.TargetSpec{URL: "http://multi.test:" + port + "/", Method: http.MethodGet, Timeout: relaxedTimeout, Addresses: probing.AddressesAny})
		require.Len(t, res.Addresses, 3)
		assert.True(t, res.Addresses[0].Success, res.Addresses[0].Message)
		assert.Equal(t, probing.ReasonEgressDenied, res.Addresses[1].Reason, res.Addresses[1].Message)
		assert.Equal(t, probing.ReasonConnectionFailed, res.Addresses[2].Reason, res.Addresses[2].Message)
		assert.Contains(t, res.Message, "2 of 3 addresses failing (127.0.0.2: ")
	})
	t.Run("at most MaxAddresses", func(t *testing.T) {
		t.Parallel()
		prober := newKindProber(t, dns, probing.ProberOptions{})
		res := probe(t.Context(), prober, probing.TargetSpec{URL: "tcp://many.test:" + port, Timeout: relaxedTimeout, Addresses: probing.AddressesAll})
		require.Len(t, res.Addresses, probing.MaxAddresses)
		assert.Equal(t, netip.MustParseAddr("127.0.1.21"), res.Addresses[0].Address, "the lowest first")
		assert.Equal(t, netip.MustParseAddr("127.0.1.36"), res.Addresses[probing.MaxAddresses-1].Address)
		refused := `connect "tcp://many.test:` + port + `": dial tcp many.test:` + port + `: connect: connection refused`
		assert.Equal(t, `16 of 16 addresses failing (127.0.1.21: `+refused+`; 127.0.1.22: `+refused+`; 127.0.1.23: `+refused+`; 13 more)`, res.Message)
	})
	t.Run("within the timeout", func(t *testing.T) {
		t.Parallel()
		// 127.0.0.2 accepts (its listener's backlog) but never answers.
		silent := probetest.NewTestDNSServer(t, map[string][]net.IP{"healthy.test": {net.IPv4(127, 0, 0, 1)}})
		_, lns := probetest.SharedPort(t, []string{"127.0.0.1", "127.0.0.2"}, nil)
		for _, ln := range lns {
			probetest.ServeConns(t, ln, time.Minute, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // reads, never answers
		}
		_, silentPort, _ := net.SplitHostPort(lns[0].Addr().String())
		require.NoError(t, silent.SetRecords(map[string][]net.IP{"healthy.test": {net.IPv4(127, 0, 0, 1)}, "silent.test": {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)}}))
		prober := newKindProber(t, silent, probing.ProberOptions{})
		start := time.Now()
		res := probe(t.Context(), prober, probing.TargetSpec{URL: "http://silent.test:" + silentPort + "/", Method: http.MethodGet, Timeout: time.Second, Addresses: probing.AddressesAll})
		assert.Less(t, time.Since(start), time.Second+slack, "the addresses are probed at once, within one timeout")
		assert.Equal(t, probing.ReasonTimeout, res.Reason)
		require.Len(t, res.Addresses, 2)
	})
}

// TestAddressesRefusedWith: NewTarget refuses a mode other than First
// with a proxy (which resolves the name itself), with ReuseConnections,
// and an unknown mode.
func TestAddressesRefusedWith(t *testing.T) {
	t.Parallel()
	base := probing.TargetSpec{URL: "http://multi.test/", Method: http.MethodGet, Timeout: time.Second, Addresses: probing.AddressesAll}
	cases := map[string]struct {
		change func(*probing.TargetSpec)
		want   string
	}{
		"proxy": {func(s *probing.TargetSpec) { s.Proxy = &probing.Proxy{URL: "http://127.0.0.1:3128"} },
			"invalid target: addresses All cannot be probed through a proxy: the proxy resolves the name"},
		"reused connections": {func(s *probing.TargetSpec) { s.ReuseConnections = true },
			"invalid target: addresses All cannot reuse connections: a kept connection goes to one address"},
		"unknown mode": {func(s *probing.TargetSpec) { s.Addresses = "Most" },
			`invalid target: unknown addresses mode "Most" (expected Any, All, Majority or empty)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := base
			tc.change(&spec)
			_, err := probing.NewTarget(spec)
			require.EqualError(t, err, tc.want)
		})
	}
}

// at returns r for address a.
func at(r probing.AddressResult, a string) probing.AddressResult {
	r.Address = netip.MustParseAddr(a)
	return r
}

// withoutDurations returns results with their durations zeroed.
func withoutDurations(results []probing.AddressResult) []probing.AddressResult {
	if results == nil {
		return nil
	}
	out := make([]probing.AddressResult, len(results))
	for i, r := range results {
		r.Duration = 0
		out[i] = r
	}
	return out
}

// TestAddressesOfADNSServer: a dns checker whose server's name resolves
// to two addresses probes the server at each, over UDP and TCP: the zone
// answers on 127.0.0.1, nothing on 127.0.0.3.
func TestAddressesOfADNSServer(t *testing.T) {
	t.Parallel()
	zone := newZone(t)
	_, port, err := net.SplitHostPort(zone.Addr())
	require.NoError(t, err)
	names := probetest.NewTestDNSServer(t, map[string][]net.IP{"ns.multi.test": {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 3)}})
	prober := newKindProber(t, names, probing.ProberOptions{})
	for _, transport := range []string{"udp", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			spec := dnsTarget("ns.multi.test:"+port, probing.DNSOptions{Name: "a.test", Type: "A", Transport: transport})
			spec.Addresses = probing.AddressesAll
			res := probe(t.Context(), prober, spec)
			require.Len(t, res.Addresses, 2)
			assert.True(t, res.Addresses[0].Success, res.Addresses[0].Message)
			assert.Equal(t, netip.MustParseAddr("127.0.0.3"), res.Addresses[1].Address)
			assert.False(t, res.Addresses[1].Success)
			assert.False(t, res.Success)
			assert.True(t, strings.HasPrefix(res.Message, "1 of 2 addresses failing (127.0.0.3: "), res.Message)
		})
	}
}
