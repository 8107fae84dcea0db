package egress

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// DefaultDenyCIDRs are the ranges denied unless configured otherwise:
// IPv4 and IPv6 link-local (where 169.254.169.254, the metadata endpoint of
// most clouds, lives) and the IPv6 metadata endpoint of AWS.
var DefaultDenyCIDRs = []string{"169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128"}

// PrivateCIDRs are the ranges Options.DenyPrivate adds: "this network",
// loopback, RFC 1918 private networks, carrier-grade NAT, the unspecified
// IPv6 address, IPv6 loopback and unique local addresses.
var PrivateCIDRs = []string{
	"0.0.0.0/8", "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
	"::/128", "::1/128", "fc00::/7",
}

// Options configure a Policy.
type Options struct {
	// Deny lists the denied ranges.
	Deny []netip.Prefix
	// Allow lists ranges that may be reached even inside a denied range.
	Allow []netip.Prefix
	// DenyPrivate also denies PrivateCIDRs.
	DenyPrivate bool
}

// Policy decides which addresses may be dialled. The zero value and a nil
// *Policy allow everything. A Policy is immutable and safe for concurrent
// use.
type Policy struct {
	deny, allow []netip.Prefix
}

// DeniedError is the error of a connection the policy refused.
type DeniedError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Range is the denied range it is in.
	Range netip.Prefix
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("egress to %s denied by policy (in denied range %s)", e.Addr, e.Range)
}

// NewPolicy returns the policy described by opts.
func NewPolicy(opts Options) *Policy {
	p := &Policy{}
	for _, r := range opts.Deny {
		p.deny = append(p.deny, normalize(r))
	}
	if opts.DenyPrivate {
		p.deny = append(p.deny, mustParse(PrivateCIDRs)...)
	}
	for _, r := range opts.Allow {
		p.allow = append(p.allow, normalize(r))
	}
	return p
}

// ParseCIDRs parses address ranges such as "10.0.0.0/8" or "fd00::/8". A
// bare address is a range of one address.
func ParseCIDRs(cidrs []string) ([]netip.Prefix, error) {
	prefixes := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !strings.Contains(c, "/") {
			addr, err := netip.ParseAddr(c)
			if err != nil {
				return nil, fmt.Errorf("invalid address range %q: %w", c, err)
			}
			prefixes = append(prefixes, netip.PrefixFrom(addr, addr.BitLen()))
			continue
		}
		prefix, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("invalid address range %q: %w", c, err)
		}
		prefixes = append(prefixes, prefix)
	}
	return prefixes, nil
}

func mustParse(cidrs []string) []netip.Prefix {
	prefixes, err := ParseCIDRs(cidrs)
	if err != nil {
		panic(err)
	}
	for i := range prefixes {
		prefixes[i] = normalize(prefixes[i])
	}
	return prefixes
}

// normalize masks r and turns an IPv4-mapped IPv6 range (::ffff:a.b.c.d/n)
// into the IPv4 range it means, so that it matches the addresses Check
// sees (which are unmapped).
func normalize(r netip.Prefix) netip.Prefix {
	if r.Addr().Is4In6() {
		bits := max(r.Bits()-96, 0)
		r = netip.PrefixFrom(r.Addr().Unmap(), bits)
	}
	return r.Masked()
}

// Check returns a *DeniedError when addr may not be dialled, nil when it
// may. An IPv4-mapped IPv6 address is judged as the IPv4 address it is.
func (p *Policy) Check(addr netip.Addr) error {
	if p == nil {
		return nil
	}
	addr = addr.Unmap().WithZone("")
	for _, r := range p.allow {
		if r.Contains(addr) {
			return nil
		}
	}
	for _, r := range p.deny {
		if r.Contains(addr) {
			return &DeniedError{Addr: addr, Range: r}
		}
	}
	return nil
}

// Control is a net.Dialer Control hook: it refuses, before connecting, an
// address the policy denies. address is the resolved "ip:port" the dialer
// is about to connect to; one that does not parse is refused.
func (p *Policy) Control(network, address string, _ syscall.RawConn) error {
	if p == nil {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress policy: refusing %s connection to unparsable address %q: %w", network, address, err)
	}
	return p.Check(ap.Addr())
}

// String describes the policy for logs.
func (p *Policy) String() string {
	if p == nil {
		return "allow all"
	}
	return fmt.Sprintf("deny %v except %v", p.deny, p.allow)
}
