package egress

import (
	"net/netip"
	"slices"
)

// Rule is a denied address range and why it is denied: a denial's message
// names it (see DeniedError).
type Rule struct {
	// Prefix is the denied range.
	Prefix netip.Prefix
	// Name says what the range is, such as "loopback", "Service CIDR
	// 10.96.0.0/12" or "address of node worker-1".
	Name string
	// Origin, when not empty, says where the rule comes from, such as
	// "default" or "ServiceCIDR kubernetes".
	Origin string
}

// String is the rule as a denial names it: its name, then its origin in
// parentheses.
func (r Rule) String() string {
	if r.Origin == "" {
		return r.Name
	}
	return r.Name + " (" + r.Origin + ")"
}

// inner is the rule as a denial of an embedded address names it, inside
// parentheses of its own.
func (r Rule) inner() string {
	if r.Origin == "" {
		return r.Name
	}
	return r.Name + ", " + r.Origin
}

// DefaultRange is one range of DefaultDenied: what it is and where that is
// documented.
type DefaultRange struct {
	// CIDR is the range (a bare address is a range of one address).
	CIDR string
	// Name is what the range is.
	Name string
	// Source is the document that assigns it.
	Source string
}

// DefaultDenied are the ranges every Policy denies; only Options.Allow (or a
// per-target allowance) opens them. None of them holds an external server:
// the host itself, addresses that are not a destination, the link, and the
// instance metadata services of the clouds, which hand out the node's
// credentials. The metadata addresses are listed before the link-local
// range that holds most of them, so that a denial names the service.
var DefaultDenied = []DefaultRange{
	{"0.0.0.0/8", "unspecified (this network)", "RFC 791 section 3.2, RFC 1122 section 3.2.1.3"},
	{"::/128", "unspecified", "RFC 4291 section 2.5.2"},
	{"127.0.0.0/8", "loopback", "RFC 1122 section 3.2.1.3"},
	{"::1/128", "loopback", "RFC 4291 section 2.5.3"},
	// AWS, Google Cloud, Azure, Oracle Cloud, DigitalOcean, OpenStack
	// and others serve their metadata at 169.254.169.254.
	{"169.254.169.254", "instance metadata (AWS, Google Cloud, Azure, Oracle Cloud and others)",
		"https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html"},
	{"fd00:ec2::254", "AWS instance metadata (IPv6)",
		"https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html"},
	{"169.254.170.2", "AWS ECS task metadata and credentials",
		"https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-metadata-endpoint-v2.html"},
	{"fd20:ce::254", "Google Cloud metadata server (IPv6)",
		"https://cloud.google.com/compute/docs/metadata/querying-metadata"},
	{"168.63.129.16", "Azure WireServer (platform agent, DHCP, DNS)",
		"https://learn.microsoft.com/en-us/azure/virtual-network/what-is-ip-address-168-63-129-16"},
	{"100.100.100.200", "Alibaba Cloud instance metadata",
		"https://www.alibabacloud.com/help/en/ecs/user-guide/view-instance-metadata"},
	{"192.0.0.192", "Oracle Cloud instance metadata (legacy address)",
		"https://docs.oracle.com/en-us/iaas/Content/Compute/Tasks/gettingmetadata.htm"},
	{"169.254.0.0/16", "link-local", "RFC 3927"},
	{"fe80::/10", "link-local", "RFC 4291 section 2.5.6"},
}

// defaultRules are DefaultDenied as rules.
var defaultRules = func() []Rule {
	rules := make([]Rule, 0, len(DefaultDenied))
	for _, d := range DefaultDenied {
		rules = append(rules, Rule{Prefix: mustParseOne(d.CIDR), Name: d.Name, Origin: "default"})
	}
	return rules
}()

func mustParseOne(cidr string) netip.Prefix {
	prefixes, err := ParseCIDRs([]string{cidr})
	if err != nil || len(prefixes) != 1 {
		panic("egress: bad built-in range " + cidr)
	}
	return normalize(prefixes[0])
}

// ruleSet finds the most specific rule whose range holds an address, with
// one map lookup per distinct prefix length: a set of thousands of ranges
// (a cluster's Node addresses and pod CIDRs) costs a handful of lookups
// per connection, not thousands of comparisons.
type ruleSet struct {
	lengths4, lengths6 []int // distinct prefix lengths, longest first
	rules              map[netip.Prefix]setEntry
}

type setEntry struct {
	rule Rule
	// pass marks a range that is not denied itself (an embedding prefix
	// of the special-purpose registries, judged by the address it holds)
	// but shadows the wider ranges around it.
	pass bool
}

// newRuleSet returns the set of rules; of two rules with the same range,
// the first is kept.
func newRuleSet(rules []Rule) *ruleSet {
	entries := make([]setEntry, len(rules))
	for i, r := range rules {
		entries[i] = setEntry{rule: r}
	}
	return newEntrySet(entries)
}

func newEntrySet(entries []setEntry) *ruleSet {
	s := &ruleSet{rules: make(map[netip.Prefix]setEntry, len(entries))}
	for _, e := range entries {
		e.rule.Prefix = normalize(e.rule.Prefix)
		p := e.rule.Prefix
		if !p.IsValid() {
			continue
		}
		if _, dup := s.rules[p]; dup {
			continue
		}
		s.rules[p] = e
		if p.Addr().Is4() {
			s.lengths4 = append(s.lengths4, p.Bits())
		} else {
			s.lengths6 = append(s.lengths6, p.Bits())
		}
	}
	for _, l := range []*[]int{&s.lengths4, &s.lengths6} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
		slices.Reverse(*l)
	}
	return s
}

// lookup returns the most specific rule holding addr (unmapped, without
// zone) that denies it.
func (s *ruleSet) lookup(addr netip.Addr) (Rule, bool) {
	if s == nil {
		return Rule{}, false
	}
	lengths := s.lengths6
	if addr.Is4() {
		lengths = s.lengths4
	}
	for _, bits := range lengths {
		p, err := addr.Prefix(bits)
		if err != nil {
			continue
		}
		if e, ok := s.rules[p]; ok {
			return e.rule, !e.pass
		}
	}
	return Rule{}, false
}

// len is the number of ranges in the set.
func (s *ruleSet) len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}
