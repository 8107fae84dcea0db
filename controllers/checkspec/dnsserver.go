package checkspec

import (
	"fmt"
	"net/netip"
)

// defaultDNSPort is the port of a spec.dnsServer written without one.
const defaultDNSPort = 53

// DNSServerAddress is the address (IP:port) of the DNS server a
// WebChecker's spec.dnsServer names: an IP address with a port, or
// without one (port 53). Empty stays empty (the operator's resolver).
// The API server checks the same; this is the backstop for objects it
// did not validate.
func DNSServerAddress(server string) (string, error) {
	if server == "" {
		return "", nil
	}
	if addr, err := netip.ParseAddr(server); err == nil && addr.Zone() == "" {
		return netip.AddrPortFrom(addr, defaultDNSPort).String(), nil
	}
	if ap, err := netip.ParseAddrPort(server); err == nil && ap.Port() != 0 && ap.Addr().Zone() == "" {
		return ap.String(), nil
	}
	return "", fmt.Errorf("dnsServer %q is not an IP address with an optional port, such as 10.96.0.10 or [2001:db8::53]:5353", server)
}
