package probing

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// AddressMode says which addresses of a target's name a probe connects to,
// and how their results make its verdict (TargetSpec.Addresses).
type AddressMode string

// Address modes.
const (
	// AddressesFirst connects to the name as a client does: the dialer
	// tries its addresses in turn, and the first that answers decides. A
	// dead address behind a name hides behind a live one. The default.
	AddressesFirst AddressMode = ""
	// AddressesAny probes every address; the probe succeeds when one does.
	AddressesAny AddressMode = "Any"
	// AddressesAll probes every address; the probe succeeds when all do.
	AddressesAll AddressMode = "All"
	// AddressesMajority probes every address; the probe succeeds when more
	// than half of them do.
	AddressesMajority AddressMode = "Majority"
)

// MaxAddresses is how many addresses of a name a probe in a mode other
// than AddressesFirst probes at most: the lowest (netip order) of those
// the name resolves to. A name with more is judged by those.
const MaxAddresses = 16

// maxAddressDetail bounds what the message of a probe of several addresses
// quotes of each failing address's message, and maxFailingNamed how many
// failing addresses it names; the message stays within MaxMessageBytes.
const (
	maxAddressDetail = 240
	maxFailingNamed  = 3
)

// AddressResult is the result of the probe of one address of a target's
// name (see Result.Addresses).
type AddressResult struct {
	// Address is the address connected to.
	Address netip.Addr
	// Success, Reason, Message and StatusCode are those of the probe of
	// this address alone, as Result's.
	Success    bool
	Reason     Reason
	Message    string
	StatusCode int
	// Duration is how long the probe of this address took.
	Duration time.Duration
}

// sameOutcome reports whether a and o hold the same outcome, ignoring how
// long the probes took.
func (a AddressResult) sameOutcome(o AddressResult) bool {
	return a.Address == o.Address && a.Success == o.Success && a.Reason == o.Reason &&
		a.Message == o.Message && a.StatusCode == o.StatusCode
}

// sameAddressOutcomes reports whether a and b hold the same outcome for
// the same addresses, in the same order.
func sameAddressOutcomes(a, b []AddressResult) bool {
	return slices.EqualFunc(a, b, AddressResult.sameOutcome)
}

// pinnedAddress is what a context carries to make every connection to
// host go to addr instead of the addresses host resolves to.
type pinnedAddress struct {
	host string
	addr netip.Addr
}

type pinnedAddressKey struct{}

// withPinnedAddress returns ctx whose connections to host (a name, any
// port) go to addr (see pinnedDialAddress): the probe of one address of
// a target's name. The name stays the request's host and the TLS server
// name; only where the connection goes changes, and the egress policy
// judges addr at dial as ever.
func withPinnedAddress(ctx context.Context, host string, addr netip.Addr) context.Context {
	return context.WithValue(ctx, pinnedAddressKey{}, pinnedAddress{host: host, addr: addr})
}

// pinnedDialAddress returns addr (host:port) with its host replaced by the
// address ctx pins it to (withPinnedAddress), or addr unchanged when ctx
// pins none or another host.
func pinnedDialAddress(ctx context.Context, addr string) string {
	pin, ok := ctx.Value(pinnedAddressKey{}).(pinnedAddress)
	if !ok {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !strings.EqualFold(strings.TrimSuffix(host, "."), pin.host) {
		return addr
	}
	return net.JoinHostPort(pin.addr.String(), port)
}

// hostName is the host whose addresses a probe of t connects to: the URL's
// host name (a dns target's server).
func (t *builtTarget) hostName() string {
	return strings.TrimSuffix(t.url.Hostname(), ".")
}

// probeEachAddress probes every address of t's name with prober, at once
// and within t's timeout, and judges them by t's Addresses mode (see
// combineAddresses). The name is resolved once, with t's DNS server and
// IP family; a name that does not resolve fails the probe with
// ReasonDNSFailed. An IP address is its own single address.
func (p *KindProber) probeEachAddress(ctx context.Context, t Target, prober Prober) Result {
	start := time.Now()
	b := t.b
	probeCtx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	host := b.hostName()
	addrs, err := p.resolveAll(probeCtx, b, host)
	if err != nil {
		res := Result{Reason: classify(err), Message: fmt.Sprintf("resolve %q: %s", host, errorText(err, textScope{dnsServer: p.opts.dnsServerOf(b), names: []string{host}}))}
		switch {
		case ctx.Err() != nil:
			res.Reason, res.Message = ReasonTimeout, fmt.Sprintf("resolve %q: probe cancelled: %v", host, ctx.Err())
		case probeCtx.Err() != nil:
			res.Reason, res.Message = ReasonTimeout, fmt.Sprintf("resolve %q: timeout after %s", host, b.Timeout)
		}
		return finish(res, start)
	}
	results := make([]Result, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() { results[i] = prober.Probe(withPinnedAddress(probeCtx, host, addr), t) })
	}
	wg.Wait()
	return finish(combineAddresses(b.Addresses, addrs, results), start)
}

// resolveAll returns the addresses of host for a probe of t: those of t's
// IP family, as a Result holds them (see sortedAddresses). An IP address
// is returned as it is.
func (p *KindProber) resolveAll(ctx context.Context, t *builtTarget, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, nil
	}
	network := "ip"
	switch t.IPFamily {
	case IPFamilyIPv4:
		network = "ip4"
	case IPFamilyIPv6:
		network = "ip6"
	}
	resolver := cmp.Or(resolvingWith(p.dialer, t.DNSServer).Resolver, net.DefaultResolver)
	found, err := resolver.LookupNetIP(withEgressAllowance(ctx, t), network, host)
	if err != nil {
		return nil, err
	}
	addrs := sortedAddresses(found)
	if addrs == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// combineAddresses makes the result of a probe of several addresses (addrs,
// whose probes gave results) under mode: it succeeds when one address does
// (AddressesAny), when all do (AddressesAll), or when more than half do
// (AddressesMajority). Its reason, status code, certificate and phases are
// those of the first address (in addrs' order) that decided: the first
// that succeeded when it succeeds, the first that failed otherwise. Its
// message names the failing addresses ("1 of 3 addresses failing
// (127.0.0.3: ...)"), after ReadyMessage when it succeeds anyway; its
// certificate expiry is the earliest of any address's. Result.Addresses
// holds every address's own result, Result.ResolvedAddresses addrs.
func combineAddresses(mode AddressMode, addrs []netip.Addr, results []Result) Result {
	each := make([]AddressResult, len(addrs))
	succeeded, firstOK, firstFailed := 0, -1, -1
	var expiry *time.Time
	for i, r := range results {
		each[i] = AddressResult{Address: addrs[i], Success: r.Success, Reason: r.Reason, Message: r.Message, StatusCode: r.StatusCode, Duration: r.Duration}
		if r.Success {
			succeeded++
			if firstOK < 0 {
				firstOK = i
			}
		} else if firstFailed < 0 {
			firstFailed = i
		}
		if r.CertificateExpiry != nil && (expiry == nil || r.CertificateExpiry.Before(*expiry)) {
			expiry = r.CertificateExpiry
		}
	}
	var success bool
	switch mode {
	case AddressesAny:
		success = succeeded > 0
	case AddressesMajority:
		success = 2*succeeded > len(addrs)
	default: // AddressesAll
		success = succeeded == len(addrs)
	}
	var res Result
	if success {
		res = results[firstOK]
		if succeeded < len(addrs) {
			res.Message = ReadyMessage + ": " + failingAddresses(each)
		}
	} else {
		res = results[firstFailed]
		res.Message = failingAddresses(each)
		res.CertificateWarning = ""
	}
	res.CertificateExpiry = expiry
	res.Addresses = each
	res.ResolvedAddresses = addrs // the name's, not the pinned dial's
	return res
}

// failingAddresses says how many of the addresses of each failed, and
// why, for the first maxFailingNamed of them.
func failingAddresses(each []AddressResult) string {
	var named []string
	failed := 0
	for _, a := range each {
		if a.Success {
			continue
		}
		failed++
		if len(named) < maxFailingNamed {
			named = append(named, a.Address.String()+": "+Truncate(a.Message, maxAddressDetail))
		}
	}
	noun := "addresses"
	if len(each) == 1 {
		noun = "address"
	}
	msg := fmt.Sprintf("%d of %d %s failing (%s", failed, len(each), noun, strings.Join(named, "; "))
	if failed > len(named) {
		msg += fmt.Sprintf("; %d more", failed-len(named))
	}
	return msg + ")"
}
