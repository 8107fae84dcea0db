package egress_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/egress"
)

// These tests only ask the decision function: nothing here dials.

func policy(t *testing.T, deny, allow []string, denyPrivate bool) *egress.Policy {
	t.Helper()
	d, err := egress.ParseCIDRs(deny)
	require.NoError(t, err)
	a, err := egress.ParseCIDRs(allow)
	require.NoError(t, err)
	return egress.NewPolicy(egress.Options{Deny: d, Allow: a, DenyPrivate: denyPrivate})
}

// denial is the rule that denied addr ("" when allowed) and the denial's
// message.
func denial(t *testing.T, p *egress.Policy, addr string, extra ...string) (string, string) {
	t.Helper()
	allowed, err := egress.ParseCIDRs(extra)
	require.NoError(t, err)
	err = p.CheckAllowing(netip.MustParseAddr(addr), allowed)
	if err == nil {
		return "", ""
	}
	var denied *egress.DeniedError
	require.ErrorAs(t, err, &denied)
	return denied.Rule.Prefix.String(), err.Error()
}

func TestPolicyCheck(t *testing.T) {
	defaults := policy(t, nil, nil, false)
	private := policy(t, nil, nil, true)
	holes := policy(t, nil, []string{"10.20.0.0/16", "169.254.170.2", "127.0.0.0/8"}, true)
	mapped := policy(t, []string{"::ffff:192.0.2.0/120"}, nil, false)

	tests := map[string]struct {
		policy   *egress.Policy
		addr     string
		deniedBy string // the denied range, "" when allowed
	}{
		"default: metadata":                  {defaults, "169.254.169.254", "169.254.169.254/32"},
		"default: any IPv4 link-local":       {defaults, "169.254.1.1", "169.254.0.0/16"},
		"default: IPv6 link-local":           {defaults, "fe80::1", "fe80::/10"},
		"default: zoned IPv6 link-local":     {defaults, "fe80::1%eth0", "fe80::/10"},
		"default: AWS IPv6 metadata":         {defaults, "fd00:ec2::254", "fd00:ec2::254/128"},
		"default: IPv4-mapped metadata":      {defaults, "::ffff:169.254.169.254", "169.254.169.254/32"},
		"default: next to AWS IPv6 metadata": {defaults, "fd00:ec2::253", ""},
		"default: GCP IPv6 metadata":         {defaults, "fd20:ce::254", "fd20:ce::254/128"},
		"default: Alibaba metadata":          {defaults, "100.100.100.200", "100.100.100.200/32"},
		"default: Oracle metadata":           {defaults, "192.0.0.192", "192.0.0.192/32"},
		"default: Azure WireServer":          {defaults, "168.63.129.16", "168.63.129.16/32"},
		"default: next to Azure WireServer":  {defaults, "168.63.129.17", ""},
		"default: public IPv4":               {defaults, "192.0.2.10", ""},
		"default: public IPv6":               {defaults, "2001:db8::1", ""},
		"default: loopback":                  {defaults, "127.0.0.1", "127.0.0.0/8"},
		"default: loopback elsewhere in /8":  {defaults, "127.255.0.9", "127.0.0.0/8"},
		"default: IPv6 loopback":             {defaults, "::1", "::1/128"},
		"default: unspecified":               {defaults, "0.0.0.0", "0.0.0.0/8"},
		"default: IPv6 unspecified":          {defaults, "::", "::/128"},
		"default: mapped loopback":           {defaults, "::ffff:127.0.0.1", "127.0.0.0/8"},
		"default: private":                   {defaults, "10.1.2.3", ""},
		"private: RFC 1918 10/8":             {private, "10.1.2.3", "10.0.0.0/8"},
		"private: RFC 1918 172.16/12":        {private, "172.31.255.255", "172.16.0.0/12"},
		"private: outside 172.16/12":         {private, "172.32.0.1", ""},
		"private: RFC 1918 192.168/16":       {private, "192.168.0.1", "192.168.0.0/16"},
		"private: CGNAT":                     {private, "100.64.0.1", "100.64.0.0/10"},
		"private: IPv6 ULA":                  {private, "fd12:3456::1", "fc00::/7"},
		"private: metadata still default":    {private, "169.254.169.254", "169.254.169.254/32"},
		"private: public":                    {private, "8.8.8.8", ""},
		"private: public IPv6":               {private, "2606:4700::1", ""},
		"allow punches a hole in private":    {holes, "10.20.3.4", ""},
		"allow is no wider than given":       {holes, "10.21.0.1", "10.0.0.0/8"},
		"allow a single address":             {holes, "169.254.170.2", ""},
		"next to the allowed address":        {holes, "169.254.170.3", "169.254.0.0/16"},
		"allow opens a default":              {holes, "127.0.0.1", ""},
		"allow opens a mapped default":       {holes, "::ffff:127.0.0.1", ""},
		"mapped range denies IPv4":           {mapped, "192.0.2.7", "192.0.2.0/24"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			deniedBy, msg := denial(t, tc.policy, tc.addr)
			assert.Equal(t, tc.deniedBy, deniedBy, msg)
		})
	}
}

// TestDefaultDenied holds every default range, with its name and source.
func TestDefaultDenied(t *testing.T) {
	p := policy(t, nil, nil, false)
	for _, d := range egress.DefaultDenied {
		t.Run(d.CIDR, func(t *testing.T) {
			prefixes, err := egress.ParseCIDRs([]string{d.CIDR})
			require.NoError(t, err)
			require.Len(t, prefixes, 1)
			assert.NotEmpty(t, d.Name)
			assert.NotEmpty(t, d.Source)
			first, last := prefixes[0].Addr(), lastAddr(prefixes[0])
			for _, a := range []netip.Addr{first, last} {
				deniedBy, msg := denial(t, p, a.String())
				assert.NotEmpty(t, deniedBy, a)
				assert.Contains(t, msg, "(default)")
			}
		})
	}
	for _, addr := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "10.0.0.1", "172.16.0.1", "fd00::1"} {
		deniedBy, _ := denial(t, p, addr)
		assert.Empty(t, deniedBy, addr)
	}
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestSpecialPurposeRegistry holds every registry entry: the first and last
// address of each is denied by --deny-private-networks (with the most
// specific entry's name), or, for an embedding prefix, not by the prefix
// itself; and none of them is denied without it but for the defaults.
func TestSpecialPurposeRegistry(t *testing.T) {
	private := policy(t, nil, nil, true)
	// A public address inside each embedding keeps the embedded judgement
	// from denying it.
	public := map[string]string{
		"64:ff9b::/96":   "64:ff9b::808:808",
		"64:ff9b:1::/48": "64:ff9b:1:808:8:808:808:808",
		"2001::/32":      "2001:0:0:0:0:0:f7f7:f7f7",
		"2002::/16":      "2002:808:808::1",
	}
	for _, s := range egress.SpecialPurpose {
		t.Run(s.CIDR, func(t *testing.T) {
			assert.NotEmpty(t, s.Name)
			assert.Regexp(t, `^RFC \d+$`, s.RFC)
			prefixes, err := egress.ParseCIDRs([]string{s.CIDR})
			require.NoError(t, err)
			if s.Embeds != "" {
				deniedBy, msg := denial(t, private, public[s.CIDR])
				assert.Empty(t, deniedBy, msg)
				return
			}
			// A range the defaults hold is named by them; Teredo's first
			// address (2001::/23's) embeds 255.255.255.255.
			for _, a := range []netip.Addr{prefixes[0].Addr(), lastAddr(prefixes[0])} {
				deniedBy, msg := denial(t, private, a.String())
				require.NotEmpty(t, deniedBy, a)
				assert.Regexp(t, `private network |\(default\)|embedding`, msg)
			}
		})
	}
	// The registry marks the most specific entry: one inside 2001::/23.
	_, msg := denial(t, private, "2001:2::1")
	assert.Equal(t, "egress to 2001:2::1 denied: private network 2001:2::/48 (Benchmarking, RFC 5180)", msg)
	_, msg = denial(t, private, "2001:5::1")
	assert.Equal(t, "egress to 2001:5::1 denied: private network 2001::/23 (IETF Protocol Assignments, RFC 2928)", msg)
}

func TestEmbeddedIPv4(t *testing.T) {
	defaults := policy(t, nil, nil, false)
	private := policy(t, nil, nil, true)
	allowLoopback := policy(t, nil, []string{"127.0.0.0/8"}, false)
	allow6to4 := policy(t, nil, []string{"2002::/16"}, false)
	cluster := policy(t, nil, nil, false)
	cluster.SetClusterNetworks([]egress.Rule{{Prefix: netip.MustParsePrefix("10.96.0.0/12"), Name: "Service CIDR 10.96.0.0/12", Origin: "ServiceCIDR kubernetes"}})

	tests := map[string]struct {
		policy *egress.Policy
		addr   string
		want   string // the message, "" when allowed
	}{
		"NAT64 of loopback": {defaults, "64:ff9b::7f00:1",
			"egress to 64:ff9b::7f00:1 denied: NAT64 address embedding 127.0.0.1 (loopback, default)"},
		"NAT64 of metadata": {defaults, "64:ff9b::a9fe:a9fe",
			"egress to 64:ff9b::a9fe:a9fe denied: NAT64 address embedding 169.254.169.254 (instance metadata (AWS, Google Cloud, Azure, Oracle Cloud and others), default)"},
		"NAT64 of a public address": {private, "64:ff9b::808:808", ""},
		"NAT64 of a private address": {private, "64:ff9b::a00:1",
			"egress to 64:ff9b::a00:1 denied: NAT64 address embedding 10.0.0.1 (private network 10.0.0.0/8, Private-Use, RFC 1918)"},
		"local NAT64 /96 of a private address": {private, "64:ff9b:1::a00:1",
			"egress to 64:ff9b:1::a00:1 denied: NAT64 address embedding 10.0.0.1 (private network 10.0.0.0/8, Private-Use, RFC 1918)"},
		// 64:ff9b:1:a00:0:100:: holds 10.0.0.1 as a /48 layout does
		// (bits 48-63 and 72-87, skipping 64-71).
		"local NAT64 /48 of a private address": {private, "64:ff9b:1:a00:0:100::",
			"egress to 64:ff9b:1:a00:0:100:: denied: NAT64 address embedding 10.0.0.1 (private network 10.0.0.0/8, Private-Use, RFC 1918)"},
		"local NAT64 /64 of loopback": {defaults, "64:ff9b:1:0:7f:0:100:0",
			"egress to 64:ff9b:1:0:7f:0:100:0 denied: NAT64 address embedding 127.0.0.1 (loopback, default)"},
		"local NAT64 /96 of a public address": {private, "64:ff9b:1::808:808", ""},
		"local NAT64 /64 of a public address": {private, "64:ff9b:1:0:8:808:800:0", ""},
		"6to4 of a private address": {private, "2002:a00:1::",
			"egress to 2002:a00:1:: denied: 6to4 address embedding 10.0.0.1 (private network 10.0.0.0/8, Private-Use, RFC 1918)"},
		"6to4 of loopback": {defaults, "2002:7f00:1::1",
			"egress to 2002:7f00:1::1 denied: 6to4 address embedding 127.0.0.1 (loopback, default)"},
		"6to4 of a public address": {private, "2002:808:808::1", ""},
		"Teredo of loopback": {defaults, "2001:0:4136:e378:8000:63bf:80ff:fffe",
			"egress to 2001:0:4136:e378:8000:63bf:80ff:fffe denied: Teredo address embedding 127.0.0.1 (loopback, default)"},
		"Teredo of a public address": {private, "2001:0:4136:e378:8000:63bf:f7f7:f7f7", ""},
		"IPv4-compatible loopback": {defaults, "::127.0.0.1",
			"egress to ::7f00:1 denied: IPv4-compatible address embedding 127.0.0.1 (loopback, default)"},
		"IPv4-compatible private": {private, "::10.1.2.3",
			"egress to ::a01:203 denied: IPv4-compatible address embedding 10.1.2.3 (private network 10.0.0.0/8, Private-Use, RFC 1918)"},
		"IPv4-compatible public":                           {private, "::8.8.8.8", ""},
		"allowing the IPv4 address allows its embedding":   {allowLoopback, "2002:7f00:1::1", ""},
		"an allowed address is allowed whatever it embeds": {allow6to4, "2002:7f00:1::1", ""},
		"NAT64 of a Service address": {cluster, "64:ff9b::a60:1",
			"egress to 64:ff9b::a60:1 denied: NAT64 address embedding 10.96.0.1 (Service CIDR 10.96.0.0/12, ServiceCIDR kubernetes)"},
		"no embedding outside the prefixes": {defaults, "2003:7f00:1::1", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, msg := denial(t, tc.policy, tc.addr)
			assert.Equal(t, tc.want, msg)
		})
	}
}

func TestClusterNetworks(t *testing.T) {
	p := egress.NewPolicy(egress.Options{AwaitClusterNetworks: true, Allow: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	n, known := p.ClusterNetworks()
	assert.Equal(t, 0, n)
	assert.False(t, known)
	_, msg := denial(t, p, "8.8.8.8")
	assert.Equal(t, "egress to 8.8.8.8 denied: cluster networks not listed yet (every address is denied until they are)", msg)
	deniedBy, _ := denial(t, p, "192.0.2.1")
	assert.Empty(t, deniedBy, "allowed while pending")

	p.SetClusterNetworks([]egress.Rule{
		{Prefix: netip.MustParsePrefix("10.96.0.0/12"), Name: "Service CIDR 10.96.0.0/12", Origin: "ServiceCIDR kubernetes"},
		{Prefix: netip.MustParsePrefix("10.0.0.5/32"), Name: "address of node worker-1"},
		{Prefix: netip.MustParsePrefix("10.244.1.0/24"), Name: "pod CIDR 10.244.1.0/24", Origin: "node worker-1"},
		{Prefix: netip.MustParsePrefix("10.96.0.1/32"), Name: "API server endpoint 10.96.0.1", Origin: "EndpointSlice kubernetes"},
	})
	n, known = p.ClusterNetworks()
	assert.Equal(t, 4, n)
	assert.True(t, known)
	for addr, want := range map[string]string{
		"8.8.8.8":     "",
		"10.100.0.1":  "egress to 10.100.0.1 denied: Service CIDR 10.96.0.0/12 (ServiceCIDR kubernetes)",
		"10.96.0.1":   "egress to 10.96.0.1 denied: API server endpoint 10.96.0.1 (EndpointSlice kubernetes)",
		"10.0.0.5":    "egress to 10.0.0.5 denied: address of node worker-1",
		"10.0.0.6":    "",
		"10.244.1.77": "egress to 10.244.1.77 denied: pod CIDR 10.244.1.0/24 (node worker-1)",
	} {
		_, msg := denial(t, p, addr)
		assert.Equal(t, want, msg, addr)
	}
	_, msg = denial(t, p, "10.0.0.5", "10.0.0.0/24")
	assert.Empty(t, msg, "a dial's allowance opens the cluster's networks")

	p.SetClusterNetworks(nil)
	_, msg = denial(t, p, "10.100.0.1")
	assert.Empty(t, msg, "replaced")
}

func TestPolicyControl(t *testing.T) {
	p := policy(t, nil, nil, false)
	assert.NoError(t, p.Control("tcp4", "192.0.2.1:80", nil))
	assert.EqualError(t, p.Control("tcp4", "127.0.0.1:80", nil), "egress to 127.0.0.1 denied: loopback (default)")
	assert.Error(t, p.Control("tcp6", "[fe80::1%eth0]:443", nil))
	assert.ErrorContains(t, p.Control("tcp", "not-an-address", nil), "unparsable address")

	allowed := egress.ContextWithAllowed(context.Background(), []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	assert.NoError(t, p.ControlContext(allowed, "tcp4", "127.0.0.1:80", nil))
	assert.Error(t, p.ControlContext(allowed, "tcp4", "127.0.0.2:80", nil))
	assert.Error(t, p.ControlContext(context.Background(), "tcp4", "127.0.0.1:80", nil))

	var nilPolicy *egress.Policy
	assert.NoError(t, nilPolicy.Control("tcp", "169.254.169.254:80", nil))
}

func TestParseCIDRs(t *testing.T) {
	got, err := egress.ParseCIDRs([]string{" 10.0.0.0/8", "", "192.0.2.1", "2001:db8::/32"})
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("2001:db8::/32"),
	}, got)
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0/8"} {
		_, err := egress.ParseCIDRs([]string{bad})
		assert.ErrorContains(t, err, "invalid address range", bad)
	}
}

// BenchmarkCheck measures a check against a policy with 20,000 cluster
// ranges (5,000 nodes' addresses and pod CIDRs).
func BenchmarkCheck(b *testing.B) {
	p := egress.NewPolicy(egress.Options{DenyPrivate: true})
	var rules []egress.Rule
	for i := range 5000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1})
		rules = append(rules, egress.Rule{Prefix: netip.PrefixFrom(a, 32), Name: "node"})
		rules = append(rules, egress.Rule{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 128 + byte(i>>8), byte(i), 0}), 24), Name: "pods"})
	}
	p.SetClusterNetworks(rules)
	addr := netip.MustParseAddr("64:ff9b::808:808")
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Check(addr); err != nil {
			b.Fatal(err)
		}
	}
}
