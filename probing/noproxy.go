package probing

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// NoProxy is a list of the hosts a proxy does not apply to, as NO_PROXY
// (see ParseNoProxy). The zero value matches no host.
type NoProxy struct {
	entries []noProxyEntry
}

// noProxyEntry is one entry of a NoProxy: an address range, or a host name
// that matches itself and its subdomains (with a leading dot, only its
// subdomains), or "*" (every host).
type noProxyEntry struct {
	prefix netip.Prefix
	domain string
	dotted bool
	all    bool
}

// ParseNoProxy parses a comma-separated list of host names, .domains, IP
// addresses, CIDR ranges or *, as curl and Go's
// golang.org/x/net/http/httpproxy read NO_PROXY, except that loopback
// addresses and localhost are not exempted implicitly. A port is ignored,
// as by curl; empty entries are skipped.
func ParseNoProxy(list string) (NoProxy, error) {
	var n NoProxy
	for _, raw := range strings.Split(list, ",") {
		entry := strings.ToLower(strings.TrimSpace(raw))
		switch {
		case entry == "":
		case entry == "*":
			n.entries = append(n.entries, noProxyEntry{all: true})
		case strings.Contains(entry, "/"):
			prefix, err := netip.ParsePrefix(entry)
			if err != nil {
				return NoProxy{}, fmt.Errorf("%q: %w", raw, err)
			}
			n.entries = append(n.entries, noProxyEntry{prefix: prefix.Masked()})
		default:
			if addr, err := netip.ParseAddr(strings.Trim(entry, "[]")); err == nil {
				n.entries = append(n.entries, noProxyEntry{prefix: netip.PrefixFrom(addr, addr.BitLen())})
				continue
			}
			if host, _, err := net.SplitHostPort(entry); err == nil {
				entry = host // a port is ignored, as by curl
			}
			n.entries = append(n.entries, noProxyEntry{domain: strings.TrimPrefix(entry, "."), dotted: strings.HasPrefix(entry, ".")})
		}
	}
	return n, nil
}

// Matches reports whether host (a name or an IP address, as
// url.URL.Hostname returns it; case and a trailing dot do not matter) is
// one the proxy does not apply to.
func (n NoProxy) Matches(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	addr, addrErr := netip.ParseAddr(host)
	for _, e := range n.entries {
		switch {
		case e.all:
			return true
		case e.prefix.IsValid():
			if addrErr == nil && e.prefix.Contains(addr.Unmap()) {
				return true
			}
		case host == e.domain && !e.dotted, strings.HasSuffix(host, "."+e.domain):
			return true
		}
	}
	return false
}
