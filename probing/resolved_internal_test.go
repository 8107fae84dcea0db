package probing

import (
	"errors"
	"fmt"
	"net"
	"net/http/httptrace"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAddressSet: the addresses of a lookup are kept sorted, without
// duplicates (mapped IPv4 addresses are IPv4), at most
// MaxResolvedAddresses of them, the lowest.
func TestAddressSet(t *testing.T) {
	t.Parallel()
	var many []net.IPAddr
	for i := 40; i > 0; i-- {
		many = append(many, net.IPAddr{IP: net.IPv4(127, 0, 0, byte(i))})
	}
	var lowest []netip.Addr
	for i := 1; i <= MaxResolvedAddresses; i++ {
		lowest = append(lowest, netip.MustParseAddr(fmt.Sprintf("127.0.0.%d", i)))
	}
	cases := map[string]struct {
		addrs []net.IPAddr
		want  []netip.Addr
	}{
		"none":       {},
		"sorted":     {addrs: []net.IPAddr{{IP: net.ParseIP("::1")}, {IP: net.IPv4(127, 0, 0, 2)}, {IP: net.IPv4(127, 0, 0, 1)}}, want: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("::1")}},
		"duplicates": {addrs: []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}, {IP: net.IPv4(127, 0, 0, 1).To4()}}, want: []netip.Addr{netip.MustParseAddr("127.0.0.1")}},
		"bounded":    {addrs: many, want: lowest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, addressSet(tc.addrs))
		})
	}
}

// TestResolutionCountsTheTargetsName: only the first successful lookup
// of the target's own name counts; a lookup of another name (a redirect's
// host, a proxy's) does not, and a proxied or literal host records no
// lookup at all.
func TestResolutionCountsTheTargetsName(t *testing.T) {
	t.Parallel()
	a := func(s string) []net.IPAddr { return []net.IPAddr{{IP: net.ParseIP(s)}} }
	type lookup struct {
		host  string
		addrs []net.IPAddr
		err   error
	}
	cases := map[string]struct {
		host    string
		proxied bool
		lookups []lookup
		want    []netip.Addr
	}{
		"first":             {host: "a.test", lookups: []lookup{{"a.test", a("127.0.0.1"), nil}, {"a.test", a("127.0.0.2"), nil}}, want: []netip.Addr{netip.MustParseAddr("127.0.0.1")}},
		"after a failure":   {host: "a.test", lookups: []lookup{{"a.test", nil, errors.New("timeout")}, {"a.test", a("127.0.0.2"), nil}}, want: []netip.Addr{netip.MustParseAddr("127.0.0.2")}},
		"another name":      {host: "a.test", lookups: []lookup{{"b.test", a("127.0.0.1"), nil}}},
		"any case":          {host: "A.test", lookups: []lookup{{"a.TEST.", a("127.0.0.1"), nil}}, want: []netip.Addr{netip.MustParseAddr("127.0.0.1")}},
		"proxied":           {host: "a.test", proxied: true, lookups: []lookup{{"a.test", a("127.0.0.1"), nil}}},
		"literal":           {host: "::ffff:127.0.0.3", want: []netip.Addr{netip.MustParseAddr("127.0.0.3")}},
		"proxied literal":   {host: "127.0.0.3", proxied: true},
		"nothing looked up": {host: "a.test"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var r resolution
			r.watch(tc.host, tc.proxied)
			for _, l := range tc.lookups {
				r.started(l.host)
				r.done(httptrace.DNSDoneInfo{Addrs: l.addrs, Err: l.err})
			}
			assert.Equal(t, tc.want, r.addresses())
		})
	}
}
