package checkspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/controllers/checkspec"
)

// TestCheckForDNSServer: spec.dnsServer becomes the target's DNS server,
// port 53 unless written; what the API server would refuse is an
// invalid target here too.
func TestCheckForDNSServer(t *testing.T) {
	cases := []struct {
		server, want string
		invalid      bool
	}{
		{server: "", want: ""},
		{server: "10.96.0.10", want: "10.96.0.10:53"},
		{server: "10.96.0.10:5353", want: "10.96.0.10:5353"},
		{server: "2001:db8::53", want: "[2001:db8::53]:53"},
		{server: "[2001:db8::53]:5353", want: "[2001:db8::53]:5353"},
		{server: "dns.example.com", invalid: true},
		{server: "10.96.0.10:0", invalid: true},
		{server: "fe80::1%eth0", invalid: true},
		{server: "[fe80::1%eth0]:53", invalid: true},
		{server: "10.96.0.10:", invalid: true},
	}
	for _, tc := range cases {
		t.Run(tc.server, func(t *testing.T) {
			wc := newChecker("ns", "dns-server", "https://example.com", "/")
			wc.Spec.DNSServer = tc.server
			check, err := checkspec.CheckFor(wc, nil)
			if tc.invalid {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "invalid target: dnsServer")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, check.Target.Spec().DNSServer)
		})
	}
}
