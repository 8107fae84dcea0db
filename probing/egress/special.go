package egress

// SpecialRange is one entry of the IANA special-purpose address registries
// (or one of the few ranges Options.DenyPrivate adds to them).
type SpecialRange struct {
	// CIDR is the registered range.
	CIDR string
	// Name is the registry's name of the range.
	Name string
	// RFC is the document that registered it.
	RFC string
	// Embeds, when not empty, names the IPv4 embedding the range is
	// (see DenyPrivate): such a range is not denied itself, the IPv4
	// address inside it is judged instead.
	Embeds string
}

// SpecialPurpose are the ranges Options.DenyPrivate (--deny-private-networks)
// denies: every entry of the IANA IPv4 and IPv6 special-purpose address
// registries,
//
//	https://www.iana.org/assignments/iana-ipv4-special-registry/
//	https://www.iana.org/assignments/iana-ipv6-special-registry/
//
// as of 2025, plus IPv4 and IPv6 multicast, which have registries of their
// own. A range the registries mark "globally reachable" (an anycast service,
// AS112) is denied too: none of them is a server a checker monitors, and
// several (Port Control Protocol and TURN anycast) are answered by the local
// network. The IPv4-IPv6 translation prefixes of NAT64 (64:ff9b::/96,
// 64:ff9b:1::/48), 6to4 (2002::/16) and Teredo (2001::/32) are not denied as
// such, or no IPv6-only cluster could reach an IPv4 server through DNS64:
// the IPv4 address they embed is judged instead, by every rule. An IPv4-mapped
// address (::ffff:0:0/96) is judged as the IPv4 address it is.
//
// Within the registries the most specific entry decides: Teredo's 2001::/32
// is inside 2001::/23 (IETF Protocol Assignments).
var SpecialPurpose = []SpecialRange{
	// IPv4.
	{CIDR: "0.0.0.0/8", Name: "This network", RFC: "RFC 791"},
	{CIDR: "0.0.0.0/32", Name: "This host on this network", RFC: "RFC 1122"},
	{CIDR: "10.0.0.0/8", Name: "Private-Use", RFC: "RFC 1918"},
	{CIDR: "100.64.0.0/10", Name: "Shared Address Space", RFC: "RFC 6598"},
	{CIDR: "127.0.0.0/8", Name: "Loopback", RFC: "RFC 1122"},
	{CIDR: "169.254.0.0/16", Name: "Link Local", RFC: "RFC 3927"},
	{CIDR: "172.16.0.0/12", Name: "Private-Use", RFC: "RFC 1918"},
	{CIDR: "192.0.0.0/24", Name: "IETF Protocol Assignments", RFC: "RFC 6890"},
	{CIDR: "192.0.0.0/29", Name: "IPv4 Service Continuity Prefix", RFC: "RFC 7335"},
	{CIDR: "192.0.0.8/32", Name: "IPv4 dummy address", RFC: "RFC 7600"},
	{CIDR: "192.0.0.9/32", Name: "Port Control Protocol Anycast", RFC: "RFC 7723"},
	{CIDR: "192.0.0.10/32", Name: "Traversal Using Relays around NAT Anycast", RFC: "RFC 8155"},
	{CIDR: "192.0.0.170/32", Name: "NAT64/DNS64 Discovery", RFC: "RFC 8880"},
	{CIDR: "192.0.0.171/32", Name: "NAT64/DNS64 Discovery", RFC: "RFC 8880"},
	{CIDR: "192.0.2.0/24", Name: "Documentation (TEST-NET-1)", RFC: "RFC 5737"},
	{CIDR: "192.31.196.0/24", Name: "AS112-v4", RFC: "RFC 7535"},
	{CIDR: "192.52.193.0/24", Name: "AMT", RFC: "RFC 7450"},
	{CIDR: "192.88.99.0/24", Name: "Deprecated (6to4 Relay Anycast)", RFC: "RFC 7526"},
	{CIDR: "192.88.99.2/32", Name: "6a44-relay anycast address", RFC: "RFC 6751"},
	{CIDR: "192.168.0.0/16", Name: "Private-Use", RFC: "RFC 1918"},
	{CIDR: "192.175.48.0/24", Name: "Direct Delegation AS112 Service", RFC: "RFC 7534"},
	{CIDR: "198.18.0.0/15", Name: "Benchmarking", RFC: "RFC 2544"},
	{CIDR: "198.51.100.0/24", Name: "Documentation (TEST-NET-2)", RFC: "RFC 5737"},
	{CIDR: "203.0.113.0/24", Name: "Documentation (TEST-NET-3)", RFC: "RFC 5737"},
	{CIDR: "240.0.0.0/4", Name: "Reserved", RFC: "RFC 1112"},
	{CIDR: "255.255.255.255/32", Name: "Limited Broadcast", RFC: "RFC 919"},
	{CIDR: "224.0.0.0/4", Name: "Multicast", RFC: "RFC 5771"},
	// IPv6.
	{CIDR: "::1/128", Name: "Loopback Address", RFC: "RFC 4291"},
	{CIDR: "::/128", Name: "Unspecified Address", RFC: "RFC 4291"},
	{CIDR: "64:ff9b::/96", Name: "IPv4-IPv6 Translat.", RFC: "RFC 6052", Embeds: "NAT64"},
	{CIDR: "64:ff9b:1::/48", Name: "IPv4-IPv6 Translat.", RFC: "RFC 8215", Embeds: "NAT64"},
	{CIDR: "100::/64", Name: "Discard-Only Address Block", RFC: "RFC 6666"},
	{CIDR: "100:0:0:1::/64", Name: "Dummy IPv6 Prefix", RFC: "RFC 9780"},
	{CIDR: "2001::/23", Name: "IETF Protocol Assignments", RFC: "RFC 2928"},
	{CIDR: "2001::/32", Name: "TEREDO", RFC: "RFC 4380", Embeds: "Teredo"},
	{CIDR: "2001:1::1/128", Name: "Port Control Protocol Anycast", RFC: "RFC 7723"},
	{CIDR: "2001:1::2/128", Name: "Traversal Using Relays around NAT Anycast", RFC: "RFC 8155"},
	{CIDR: "2001:1::3/128", Name: "DNS-SD Service Registration Protocol Anycast", RFC: "RFC 9665"},
	{CIDR: "2001:2::/48", Name: "Benchmarking", RFC: "RFC 5180"},
	{CIDR: "2001:3::/32", Name: "AMT", RFC: "RFC 7450"},
	{CIDR: "2001:4:112::/48", Name: "AS112-v6", RFC: "RFC 7535"},
	{CIDR: "2001:10::/28", Name: "Deprecated (previously ORCHID)", RFC: "RFC 4843"},
	{CIDR: "2001:20::/28", Name: "ORCHIDv2", RFC: "RFC 7343"},
	{CIDR: "2001:30::/28", Name: "Drone Remote ID Protocol Entity Tags (DETs) Prefix", RFC: "RFC 9374"},
	{CIDR: "2001:db8::/32", Name: "Documentation", RFC: "RFC 3849"},
	{CIDR: "2002::/16", Name: "6to4", RFC: "RFC 3056", Embeds: "6to4"},
	{CIDR: "2620:4f:8000::/48", Name: "Direct Delegation AS112 Service", RFC: "RFC 7534"},
	{CIDR: "3fff::/20", Name: "Documentation", RFC: "RFC 9637"},
	{CIDR: "5f00::/16", Name: "Segment Routing (SRv6) SIDs", RFC: "RFC 9602"},
	{CIDR: "fc00::/7", Name: "Unique-Local", RFC: "RFC 4193"},
	{CIDR: "fe80::/10", Name: "Link-Local Unicast", RFC: "RFC 4291"},
	{CIDR: "ff00::/8", Name: "Multicast", RFC: "RFC 4291"},
}

// specialRules are SpecialPurpose as a rule set: a range is named
// "private network <range>" with its registry name and RFC as origin.
var specialRules = func() *ruleSet {
	entries := make([]setEntry, 0, len(SpecialPurpose))
	for _, s := range SpecialPurpose {
		p := mustParseOne(s.CIDR)
		entries = append(entries, setEntry{
			rule: Rule{Prefix: p, Name: "private network " + p.String(), Origin: s.Name + ", " + s.RFC},
			pass: s.Embeds != "",
		})
	}
	return newEntrySet(entries)
}()
