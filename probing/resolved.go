package probing

import (
	"context"
	"net"
	"net/http/httptrace"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// MaxResolvedAddresses bounds Result.ResolvedAddresses: a name that
// resolves to more keeps the lowest ones (in netip.Addr order), so that
// the same answer always gives the same list. It is MaxAddresses: the
// addresses reported are those a probe of every address probes.
const MaxResolvedAddresses = MaxAddresses

// resolution notes the addresses that a probe's host name resolved to, as
// net.Dialer reports them to the httptrace hooks of a dial's context
// (DNSStart, DNSDone): no query of its own, and nothing when no name was
// looked up (a kept-alive connection, a lookup that failed). Only lookups
// of host count, the first that succeeded: a redirect to another host, or
// the lookup of a proxy's name, is not the target's. Its hooks may run on
// a transport's goroutines, so it is guarded by mu. The zero value notes
// nothing (see watch).
type resolution struct {
	// host is the name whose lookups count, "" for none: a target reached
	// through a proxy (the proxy resolves it), or one whose host is an IP
	// literal (literal says what it connects to).
	host string
	// literal is the address of a host that is an IP literal.
	literal netip.Addr

	mu sync.Mutex
	// looking is set from the start of a lookup of host to its end.
	looking bool
	addrs   []netip.Addr
}

// watch makes r note the lookups of host, a target's host name or IP
// literal (without brackets), unless proxied: then the proxy resolves it,
// and r notes nothing.
func (r *resolution) watch(host string, proxied bool) {
	if proxied || host == "" {
		return
	}
	if a, err := netip.ParseAddr(host); err == nil {
		r.literal = a.Unmap()
		return
	}
	r.host = host
}

// watchAddr is watch for a host:port.
func (r *resolution) watchAddr(addr string, proxied bool) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return
	}
	r.watch(host, proxied)
}

// trace returns ctx with r's hooks added to the httptrace hooks it has, for
// a dial; ctx itself when r notes nothing.
func (r *resolution) trace(ctx context.Context) context.Context {
	if r == nil || r.host == "" {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		DNSStart: func(info httptrace.DNSStartInfo) { r.started(info.Host) },
		DNSDone:  r.done,
	})
}

// started notes the start of a lookup of name.
func (r *resolution) started(name string) {
	if r.host == "" {
		return
	}
	r.mu.Lock()
	r.looking = strings.EqualFold(strings.TrimSuffix(name, "."), strings.TrimSuffix(r.host, "."))
	r.mu.Unlock()
}

// done notes the end of the lookup started last: its addresses, when it
// was one of host, the first to succeed.
func (r *resolution) done(info httptrace.DNSDoneInfo) {
	if r.host == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.looking {
		return
	}
	r.looking = false
	if info.Err != nil || r.addrs != nil || len(info.Addrs) == 0 {
		return
	}
	r.addrs = addressSet(info.Addrs)
}

// addresses returns what r noted: the literal address, the addresses of
// the first lookup of host that succeeded, or nil for none. The slice is
// the caller's.
func (r *resolution) addresses() []netip.Addr {
	if r.literal.IsValid() {
		return []netip.Addr{r.literal}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addrs
}

// addressSet returns addrs as a Result holds them (see sortedAddresses).
func addressSet(addrs []net.IPAddr) []netip.Addr {
	set := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		if a.Zone != "" && ip.Is6() {
			ip = ip.WithZone(a.Zone)
		}
		set = append(set, ip)
	}
	return sortedAddresses(set)
}

// sortedAddresses returns the addresses of a name as a Result holds them,
// in set (which it may reorder): IPv4-mapped IPv6 addresses unmapped,
// sorted, without duplicates, the lowest MaxResolvedAddresses of them;
// nil for none.
func sortedAddresses(set []netip.Addr) []netip.Addr {
	for i, ip := range set {
		set[i] = ip.Unmap()
	}
	slices.SortFunc(set, netip.Addr.Compare)
	set = slices.Compact(set)
	if len(set) > MaxResolvedAddresses {
		set = slices.Clip(set[:MaxResolvedAddresses])
	}
	if len(set) == 0 {
		return nil
	}
	return set
}
