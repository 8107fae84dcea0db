package egress_test

import (
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

func TestPolicyCheck(t *testing.T) {
	defaults := policy(t, egress.DefaultDenyCIDRs, nil, false)
	private := policy(t, egress.DefaultDenyCIDRs, nil, true)
	holes := policy(t, egress.DefaultDenyCIDRs, []string{"10.20.0.0/16", "169.254.170.2"}, true)
	mapped := policy(t, []string{"::ffff:192.0.2.0/120"}, nil, false)

	tests := map[string]struct {
		policy   *egress.Policy
		addr     string
		deniedBy string // the denied range, "" when allowed
	}{
		"default: AWS/GCP/Azure metadata":    {defaults, "169.254.169.254", "169.254.0.0/16"},
		"default: any IPv4 link-local":       {defaults, "169.254.1.1", "169.254.0.0/16"},
		"default: IPv6 link-local":           {defaults, "fe80::1", "fe80::/10"},
		"default: zoned IPv6 link-local":     {defaults, "fe80::1%eth0", "fe80::/10"},
		"default: AWS IPv6 metadata":         {defaults, "fd00:ec2::254", "fd00:ec2::254/128"},
		"default: IPv4-mapped metadata":      {defaults, "::ffff:169.254.169.254", "169.254.0.0/16"},
		"default: next to AWS IPv6 metadata": {defaults, "fd00:ec2::253", ""},
		"default: public IPv4":               {defaults, "192.0.2.10", ""},
		"default: public IPv6":               {defaults, "2001:db8::1", ""},
		"default: loopback":                  {defaults, "127.0.0.1", ""},
		"default: private":                   {defaults, "10.1.2.3", ""},
		"private: loopback":                  {private, "127.0.0.1", "127.0.0.0/8"},
		"private: loopback elsewhere in /8":  {private, "127.0.0.2", "127.0.0.0/8"},
		"private: IPv6 loopback":             {private, "::1", "::1/128"},
		"private: unspecified":               {private, "0.0.0.0", "0.0.0.0/8"},
		"private: IPv6 unspecified":          {private, "::", "::/128"},
		"private: RFC 1918 10/8":             {private, "10.1.2.3", "10.0.0.0/8"},
		"private: RFC 1918 172.16/12":        {private, "172.31.255.255", "172.16.0.0/12"},
		"private: outside 172.16/12":         {private, "172.32.0.1", ""},
		"private: RFC 1918 192.168/16":       {private, "192.168.0.1", "192.168.0.0/16"},
		"private: CGNAT":                     {private, "100.64.0.1", "100.64.0.0/10"},
		"private: IPv6 ULA":                  {private, "fd12:3456::1", "fc00::/7"},
		"private: mapped loopback":           {private, "::ffff:127.0.0.1", "127.0.0.0/8"},
		"private: metadata still denied":     {private, "169.254.169.254", "169.254.0.0/16"},
		"private: public":                    {private, "192.0.2.10", ""},
		"allow punches a hole in private":    {holes, "10.20.3.4", ""},
		"allow is no wider than given":       {holes, "10.21.0.1", "10.0.0.0/8"},
		"allow a single address":             {holes, "169.254.170.2", ""},
		"next to the allowed address":        {holes, "169.254.170.3", "169.254.0.0/16"},
		"mapped range denies IPv4":           {mapped, "192.0.2.7", "192.0.2.0/24"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			addr := netip.MustParseAddr(tc.addr)
			err := tc.policy.Check(addr)
			if tc.deniedBy == "" {
				assert.NoError(t, err)
				return
			}
			var denied *egress.DeniedError
			require.ErrorAs(t, err, &denied)
			assert.Equal(t, tc.deniedBy, denied.Range.String())
			assert.Contains(t, err.Error(), "denied by policy")
		})
	}
}

func TestPolicyControl(t *testing.T) {
	p := policy(t, egress.DefaultDenyCIDRs, nil, false)
	assert.NoError(t, p.Control("tcp4", "127.0.0.1:80", nil))
	assert.EqualError(t, p.Control("tcp4", "169.254.169.254:80", nil), "egress to 169.254.169.254 denied by policy (in denied range 169.254.0.0/16)")
	assert.Error(t, p.Control("tcp6", "[fe80::1%eth0]:443", nil))
	assert.ErrorContains(t, p.Control("tcp", "not-an-address", nil), "unparsable address")

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
