package egress

import "net/netip"

// embeddedAddr is an IPv4 address that an IPv6 address carries, and the
// kind of embedding.
type embeddedAddr struct {
	kind string // "NAT64", "6to4", "Teredo", "IPv4-compatible"
	addr netip.Addr
}

var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
	ipv4Compatible = netip.MustParsePrefix("::/96")
)

// embeddedIPv4 returns the IPv4 addresses that addr (unmapped) carries, to
// be judged as addresses of their own:
//
//   - NAT64, 64:ff9b::/96 (RFC 6052): the last 32 bits.
//   - Local-use NAT64, 64:ff9b:1::/48 (RFC 8215): its operator may use any
//     RFC 6052 prefix length from /48 to /96 inside it, so the IPv4 address
//     at each of the positions of /48, /56, /64 and /96 (bits 64 to 71 are
//     skipped, RFC 6052 section 2.2). At a position other than /96's, an
//     address in 0.0.0.0/8 is left out: that is the zeros of a shorter
//     layout, not an address a translator would reach.
//   - 6to4, 2002::/16 (RFC 3056): bits 16 to 47.
//   - Teredo, 2001::/32 (RFC 4380 section 4): the client's address, the
//     last 32 bits with every bit inverted, which the packets reach.
//   - IPv4-compatible, ::a.b.c.d (RFC 4291 section 2.5.5.1, deprecated):
//     the last 32 bits; :: itself excepted.
func embeddedIPv4(addr netip.Addr) []embeddedAddr {
	if !addr.Is6() {
		return nil
	}
	b := addr.As16()
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	switch {
	case nat64WellKnown.Contains(addr):
		return []embeddedAddr{{"NAT64", v4(12, 13, 14, 15)}}
	case nat64Local.Contains(addr):
		var out []embeddedAddr
		for i, a := range []netip.Addr{v4(6, 7, 9, 10), v4(7, 9, 10, 11), v4(9, 10, 11, 12), v4(12, 13, 14, 15)} {
			if i < 3 && a.As4()[0] == 0 {
				continue
			}
			if !containsAddr(out, a) {
				out = append(out, embeddedAddr{"NAT64", a})
			}
		}
		return out
	case sixToFour.Contains(addr):
		return []embeddedAddr{{"6to4", v4(2, 3, 4, 5)}}
	case teredo.Contains(addr):
		return []embeddedAddr{{"Teredo", netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})}}
	case ipv4Compatible.Contains(addr) && addr != netip.IPv6Unspecified():
		return []embeddedAddr{{"IPv4-compatible", v4(12, 13, 14, 15)}}
	}
	return nil
}

func containsAddr(list []embeddedAddr, a netip.Addr) bool {
	for _, e := range list {
		if e.addr == a {
			return true
		}
	}
	return false
}
