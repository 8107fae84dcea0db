package probing

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/networkio/webchecker/probing/pattern"
)

// The checks NewTarget makes of a TargetSpec's options.

// methods are the HTTP methods a Target may use, expectedMethods the same
// in messages.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodOptions}

const expectedMethods = "expected GET, HEAD, POST, PUT or OPTIONS"

// checkOptions checks the options of s, whose URL is of kind, and sorts
// its expected status codes into a set.
func (s *TargetSpec) checkOptions(kind Kind) error {
	if s.Timeout <= 0 {
		return fmt.Errorf("timeout %v is not positive", s.Timeout)
	}
	switch s.IPFamily {
	case IPFamilyAny, IPFamilyIPv4, IPFamilyIPv6:
	default:
		return fmt.Errorf("unknown IP family %q (expected IPv4, IPv6 or empty)", string(s.IPFamily))
	}
	if s.DNSServer != "" {
		if err := checkDNSServer(s.DNSServer); err != nil {
			return err
		}
	}
	if err := s.checkAddresses(); err != nil {
		return err
	}
	if s.TCP != nil {
		if kind != KindTCP && kind != KindTLS {
			return fmt.Errorf("tcp options on a %s target", kind)
		}
		if err := checkMaxBodyBytes(s.TCP.MaxBytes); err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
		if s.TCP.Expect != nil {
			if err := pattern.CheckWork(s.TCP.Expect, s.TCP.MaxBytes); err != nil {
				return fmt.Errorf("tcp: expect: %w", err)
			}
		}
	}
	if s.GRPC != (GRPCOptions{}) && kind != KindGRPC {
		return fmt.Errorf("grpc options on a %s target", kind)
	}
	switch {
	case kind == KindDNS && s.DNS == nil:
		return errors.New("dns target without dns options")
	case kind == KindDNS && s.Proxy != nil:
		return errors.New("a dns target cannot use a proxy")
	case kind == KindDNS:
		if err := s.DNS.validate(); err != nil {
			return err
		}
	case s.DNS != nil:
		return fmt.Errorf("dns options on a %s target", kind)
	}
	if s.Proxy != nil {
		if err := s.Proxy.Validate(); err != nil {
			return err
		}
	}
	if kind != KindHTTP {
		if s.Method != "" || len(s.ExpectedStatusCodes) > 0 || len(s.Headers) > 0 || s.Body != "" ||
			s.BodyMatch != nil || s.BasicAuth != nil || s.BearerToken != "" || s.OAuth2 != nil || s.ReuseConnections {
			return fmt.Errorf("HTTP options on a %s target", kind)
		}
		return nil
	}
	switch {
	case s.Method == "":
		return errors.New("missing method (" + expectedMethods + ")")
	case !slices.Contains(methods, s.Method):
		return fmt.Errorf("unsupported method %q (%s)", s.Method, expectedMethods)
	}
	if s.OAuth2 != nil {
		if s.BasicAuth != nil || s.BearerToken != "" {
			return errors.New("oauth2 with basic auth or a bearer token: set only one")
		}
		if err := s.OAuth2.check(); err != nil {
			return err
		}
	}
	for _, c := range s.ExpectedStatusCodes {
		if err := checkStatusCode(c); err != nil {
			return fmt.Errorf("expected status codes: %w", err)
		}
	}
	slices.Sort(s.ExpectedStatusCodes)
	s.ExpectedStatusCodes = slices.Compact(s.ExpectedStatusCodes)
	switch m := s.BodyMatch; {
	case m == nil:
	case m.Regexp == nil:
		return errors.New("body match without a regular expression")
	default:
		if err := m.check(); err != nil {
			return fmt.Errorf("body match: %w", err)
		}
	}
	return nil
}

// checkAddresses reports why s cannot probe its name's addresses as its
// Addresses mode asks.
func (s *TargetSpec) checkAddresses() error {
	switch s.Addresses {
	case AddressesFirst:
		return nil
	case AddressesAny, AddressesAll, AddressesMajority:
	default:
		return fmt.Errorf("unknown addresses mode %q (expected Any, All, Majority or empty)", string(s.Addresses))
	}
	switch {
	case s.Proxy != nil:
		return fmt.Errorf("addresses %s cannot be probed through a proxy: the proxy resolves the name", s.Addresses)
	case s.ReuseConnections:
		return fmt.Errorf("addresses %s cannot reuse connections: a kept connection goes to one address", s.Addresses)
	}
	return nil
}

// checkDNSServer reports why server is not an IP address and a port.
func checkDNSServer(server string) error {
	ap, err := netip.ParseAddrPort(server)
	if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
		return fmt.Errorf("DNS server %q is not an IP address and a port, such as 192.0.2.53:53 or [2001:db8::53]:53", server)
	}
	return nil
}

// Limits of the options NewTarget checks, the same as the CRD's.
const (
	MinStatusCode       = 100
	MaxStatusCode       = 599
	MaxBodyMatchBytes   = 1 << 20
	MaxBodyMatchPattern = 1024
)

func checkStatusCode(c int) error {
	if c < MinStatusCode || c > MaxStatusCode {
		return fmt.Errorf("status code %d is not between %d and %d", c, MinStatusCode, MaxStatusCode)
	}
	return nil
}

// check reports why m, with a regular expression, cannot judge a body:
// an empty expression, MaxBytes outside [1, MaxBodyMatchBytes], or an
// expression too large for MaxBytes (a *pattern.TooComplexError).
func (m *BodyMatch) check() error {
	if m.Regexp.String() == "" {
		return errors.New("empty regular expression")
	}
	if err := checkMaxBodyBytes(m.MaxBytes); err != nil {
		return err
	}
	return pattern.CheckWork(m.Regexp, m.MaxBytes)
}

func checkMaxBodyBytes(n int64) error {
	if n < 1 || n > MaxBodyMatchBytes {
		return fmt.Errorf("maxBodyBytes %d is not between 1 and %d", n, MaxBodyMatchBytes)
	}
	return nil
}
