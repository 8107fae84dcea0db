package egress

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
)

// Options configure a Policy. Every Policy denies DefaultDenied.
type Options struct {
	// Deny lists ranges denied besides DefaultDenied (--deny-cidrs).
	Deny []netip.Prefix
	// Allow lists ranges that may be reached even inside a denied range
	// (--allow-cidrs): they open every rule, the defaults and the
	// cluster's networks included.
	Allow []netip.Prefix
	// DenyPrivate also denies SpecialPurpose (--deny-private-networks).
	DenyPrivate bool
	// AwaitClusterNetworks denies every address that is not allowed
	// until the first SetClusterNetworks: a replica that has not yet
	// listed the cluster's networks cannot tell them from the outside.
	AwaitClusterNetworks bool
}

// Policy decides which addresses may be dialled. A nil *Policy allows
// everything. A Policy is safe for concurrent use; its rules are fixed
// when it is made, but for the cluster's networks, which
// SetClusterNetworks replaces at once.
//
// An address is allowed when Options.Allow or the dial's own allowance
// (ContextWithAllowed) holds it; otherwise it is denied when a rule holds
// it: DefaultDenied and Options.Deny, SpecialPurpose (with DenyPrivate),
// then the cluster's networks, the most specific range of each naming the
// denial. An IPv6
// address that embeds an IPv4 address (NAT64, 6to4, Teredo,
// IPv4-compatible: see SpecialPurpose) and is not allowed itself is then
// judged as that IPv4 address too, by the same rules and allowances: either
// denial denies it.
type Policy struct {
	deny, private *ruleSet // deny: DefaultDenied and Options.Deny
	allow         []netip.Prefix
	cluster       atomic.Pointer[clusterNetworks]
}

// clusterNetworks are the cluster's networks as last set; pending, when
// not empty, denies every address that is not allowed, with that reason.
type clusterNetworks struct {
	rules   *ruleSet
	pending string
}

// pendingClusterNetworks is the rule of a denial while the cluster's
// networks are not known yet.
const pendingClusterNetworks = "cluster networks not listed yet"

// DeniedError is the error of a connection the policy refused.
type DeniedError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Embedded, when valid, is the IPv4 address inside Addr that Rule
	// denies, and Embedding the kind of embedding ("NAT64", "6to4",
	// "Teredo", "IPv4-compatible").
	Embedded  netip.Addr
	Embedding string
	// Rule is the rule that denied it.
	Rule Rule
}

// Error names the address and the rule, such as "egress to 127.0.0.1
// denied: loopback (default)" or "egress to 2002:a00:1:: denied: 6to4
// address embedding 10.0.0.1 (private network 10.0.0.0/8, Private-Use,
// RFC 1918)".
func (e *DeniedError) Error() string {
	if e.Embedded.IsValid() {
		return fmt.Sprintf("egress to %s denied: %s address embedding %s (%s)", e.Addr, e.Embedding, e.Embedded, e.Rule.inner())
	}
	return fmt.Sprintf("egress to %s denied: %s", e.Addr, e.Rule)
}

// NewPolicy returns the policy described by opts.
func NewPolicy(opts Options) *Policy {
	// The defaults and Options.Deny are one set: the most specific range
	// of either names a denial.
	deny := slices.Clone(defaultRules)
	for _, r := range opts.Deny {
		r = normalize(r)
		deny = append(deny, Rule{Prefix: r, Name: "denied range " + r.String(), Origin: "--deny-cidrs"})
	}
	p := &Policy{deny: newRuleSet(deny)}
	if opts.DenyPrivate {
		p.private = specialRules
	}
	for _, r := range opts.Allow {
		p.allow = append(p.allow, normalize(r))
	}
	if opts.AwaitClusterNetworks {
		p.cluster.Store(&clusterNetworks{pending: pendingClusterNetworks})
	}
	return p
}

// SetClusterNetworks replaces the cluster's networks, the ranges denied
// because the cluster itself uses them (its Service CIDRs, its API
// server's endpoints, its Nodes' addresses and pod CIDRs), with rules. The
// next connection is judged by the new rules; one already made is not
// judged again. rules is not retained.
func (p *Policy) SetClusterNetworks(rules []Rule) {
	if p == nil {
		return
	}
	p.cluster.Store(&clusterNetworks{rules: newRuleSet(rules)})
}

// ClusterNetworks is the number of ranges SetClusterNetworks last set, and
// whether it was called (or the policy does not await it).
func (p *Policy) ClusterNetworks() (ranges int, known bool) {
	if p == nil {
		return 0, true
	}
	c := p.cluster.Load()
	if c == nil {
		return 0, true
	}
	return c.rules.len(), c.pending == ""
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
			prefixes = append(prefixes, netip.PrefixFrom(addr.WithZone(""), addr.BitLen()))
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
	return p.CheckAllowing(addr, nil)
}

// CheckAllowing is Check with the ranges of extra allowed too, as
// Options.Allow is: the allowance of one dial (see ContextWithAllowed).
func (p *Policy) CheckAllowing(addr netip.Addr, extra []netip.Prefix) error {
	if p == nil {
		return nil
	}
	addr = addr.Unmap().WithZone("")
	if p.allowed(addr, extra) {
		return nil
	}
	cluster := p.cluster.Load()
	if r, ok := p.denied(addr, cluster); ok {
		return &DeniedError{Addr: addr, Rule: r}
	}
	for _, e := range embeddedIPv4(addr) {
		if p.allowed(e.addr, extra) {
			continue
		}
		if r, ok := p.denied(e.addr, cluster); ok {
			return &DeniedError{Addr: addr, Embedded: e.addr, Embedding: e.kind, Rule: r}
		}
	}
	return nil
}

func (p *Policy) allowed(addr netip.Addr, extra []netip.Prefix) bool {
	for _, list := range [][]netip.Prefix{p.allow, extra} {
		for _, r := range list {
			if r.Contains(addr) {
				return true
			}
		}
	}
	return false
}

func (p *Policy) denied(addr netip.Addr, cluster *clusterNetworks) (Rule, bool) {
	for _, s := range []*ruleSet{p.deny, p.private} {
		if r, ok := s.lookup(addr); ok {
			return r, true
		}
	}
	if cluster == nil {
		return Rule{}, false
	}
	if cluster.pending != "" {
		bits := addr.BitLen()
		return Rule{Prefix: netip.PrefixFrom(addr, bits), Name: cluster.pending, Origin: "every address is denied until they are"}, true
	}
	return cluster.rules.lookup(addr)
}

// allowedKey is the context key of a dial's allowance.
type allowedKey struct{}

// ContextWithAllowed returns a copy of ctx that carries allowed: the
// ranges Control and ControlContext allow for the dials made with it,
// besides Options.Allow (a namespace's allowance, for the probes of its
// checkers). An empty allowed returns ctx.
func ContextWithAllowed(ctx context.Context, allowed []netip.Prefix) context.Context {
	if len(allowed) == 0 {
		return ctx
	}
	return context.WithValue(ctx, allowedKey{}, allowed)
}

// allowedIn is the allowance ContextWithAllowed put in ctx.
func allowedIn(ctx context.Context) []netip.Prefix {
	allowed, _ := ctx.Value(allowedKey{}).([]netip.Prefix)
	return allowed
}

// Control is a net.Dialer Control hook: it refuses, before connecting, an
// address the policy denies. address is the resolved "ip:port" the dialer
// is about to connect to; one that does not parse is refused.
func (p *Policy) Control(network, address string, c syscall.RawConn) error {
	return p.ControlContext(context.Background(), network, address, c)
}

// ControlContext is a net.Dialer ControlContext hook: Control, with the
// allowance ctx carries (see ContextWithAllowed).
func (p *Policy) ControlContext(ctx context.Context, network, address string, _ syscall.RawConn) error {
	if p == nil {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress policy: refusing %s connection to unparsable address %q: %w", network, address, err)
	}
	return p.CheckAllowing(ap.Addr(), allowedIn(ctx))
}

// String describes the policy for logs.
func (p *Policy) String() string {
	if p == nil {
		return "allow all"
	}
	desc := fmt.Sprintf("deny %d default ranges", len(defaultRules))
	if n := p.deny.len() - len(defaultRules); n > 0 {
		desc += fmt.Sprintf(", %d ranges of --deny-cidrs", n)
	}
	if p.private != nil {
		desc += fmt.Sprintf(", %d special-purpose ranges", p.private.len())
	}
	if c := p.cluster.Load(); c != nil {
		desc += ", the cluster's networks"
	}
	return fmt.Sprintf("%s; allow %v", desc, p.allow)
}
