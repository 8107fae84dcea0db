package probing

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"time"

	"github.com/networkio/webchecker/probing/pattern"
)

// Target describes what to probe and how to judge the answer. It holds
// resolved values: the prober applies no defaults, and a Target that does
// not Validate is not probed (see ReasonInvalidTarget).
//
// Its URL's scheme chooses the Kind of probe (see KindOf). The fields
// from Method to ReuseConnections are about HTTP: only http and https
// targets may set them (Method is required there); TLS and
// CertExpiryWarning apply to every kind over TLS (https, tls, grpcs); TCP,
// GRPC and DNS belong to their kinds; Judge and Proxy apply to every kind
// (but a dns target cannot use a proxy).
type Target struct {
	// URL is the absolute URL to probe (see BuildURL): http or https with
	// a path, or tcp, tls, grpc, grpcs or dns with a host and port only.
	URL string
	// Method is the HTTP method: GET, HEAD, POST, PUT or OPTIONS. Required
	// for http and https, empty for the other kinds.
	Method string
	// Timeout bounds the whole probe: resolution, connection, TLS, request,
	// and reading the (size-limited) response body. It must be positive.
	Timeout time.Duration
	// ExpectedStatusCodes lists the accepted final status codes, each
	// between MinStatusCode and MaxStatusCode. When empty, any 2xx or 3xx
	// code is accepted.
	ExpectedStatusCodes []int
	// FollowRedirects makes the prober follow up to MaxRedirects redirects.
	// When false the first response, redirect or not, is judged.
	FollowRedirects bool
	// Headers are set on the request, after the User-Agent (which they may
	// override). A "Host" header sets the request's host.
	Headers []Header
	// Body is the request body; empty sends none.
	Body string
	// BodyMatch, when set, judges the response body after the status code.
	BodyMatch *BodyMatch
	// BasicAuth, when set, is sent as HTTP basic authentication.
	BasicAuth *BasicAuth
	// BearerToken, when not empty, is sent as "Authorization: Bearer ...".
	BearerToken Secret
	// TLS configures the TLS client.
	TLS TLSOptions
	// CertExpiryWarning makes a successful https probe report a
	// Result.CertificateWarning when the chain expires
	// (Result.CertificateExpiry) sooner than this. Zero (or less) turns the
	// warning off.
	CertExpiryWarning time.Duration
	// IPFamily restricts the addresses connected to; IPFamilyAny uses both.
	IPFamily IPFamily
	// ReuseConnections lets probes of this target send their request over
	// a connection kept alive from an earlier probe (of any target with the
	// same TLS settings and IP family). Such a probe neither resolves the
	// name, nor connects, nor shakes hands: it checks only the HTTP answer,
	// and misses a changed DNS answer, a closed listener or a replaced
	// certificate for as long as the old connection lasts. False (the
	// default) makes every probe resolve, connect and shake hands anew, on
	// a connection closed after the probe.
	ReuseConnections bool
	// TCP is the query and response of a tcp or tls target; nil only
	// connects (and shakes hands).
	TCP *TCPOptions
	// GRPC is the health check of a grpc or grpcs target.
	GRPC GRPCOptions
	// DNS is the query of a dns target. Required for dns, nil otherwise.
	DNS *DNSOptions
	// Judge, when set, judges the answer once the kind's own checks passed
	// (a WebChecker's spec.conditions): a false judgement fails the probe
	// with ReasonConditionFailed.
	Judge Judge
	// Proxy, when set, is the HTTP proxy every connection of the probe goes
	// through.
	Proxy *Proxy
	// EgressAllow lists ranges the egress policy allows for this target's
	// connections besides its own allowed ones (the allowance a cluster
	// admin gave the checker's namespace). It is judged at dial time, as
	// the policy is; targets with different allowances never share a
	// connection.
	EgressAllow []netip.Prefix
}

// methods are the HTTP methods a Target may use, expectedMethods the same
// in messages.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodOptions}

const expectedMethods = "expected GET, HEAD, POST, PUT or OPTIONS"

// Validate reports why t cannot be probed: a URL that is not an absolute
// URL of a known scheme with a host, a timeout that is not positive, an
// unknown IP family, options of another kind than the URL's (HTTP
// options on a tcp target, ...), a dns target without valid DNS options or
// with a proxy, a proxy URL that is not http(s)://host:port; for http and
// https a method other than GET, HEAD, POST, PUT and OPTIONS, a status
// code out of range, or a body match without a regular expression or with
// MaxBytes outside [1, MaxBodyMatchBytes]. It resolves nothing: an empty
// Method is an error, not GET. The CA bundle (TLS.RootCAs) is
// checked when a prober first builds a client for it. Messages start with
// "invalid target" and never contain the URL's password.
func (t Target) Validate() error {
	_, _, err := t.validated()
	return err
}

// validated returns t's kind and parsed URL once t passes Validate, or
// Validate's error: the URL is parsed once, and probers use that parse.
func (t Target) validated() (Kind, *url.URL, error) {
	u, kind, err := parseTargetURL(t.URL)
	if err == nil {
		err = t.checkOptions(kind)
	}
	if err != nil {
		return "", nil, fmt.Errorf("invalid target: %w", err)
	}
	return kind, u, nil
}

// validateFor is validated for the prober called name, which probes the
// targets of kinds: a target of another kind is invalid for it.
func (t Target) validateFor(name string, kinds ...Kind) (Kind, *url.URL, error) {
	kind, u, err := t.validated()
	if err == nil && !slices.Contains(kinds, kind) {
		err = fmt.Errorf("invalid target: the %s prober cannot probe %s targets", name, kind)
	}
	return kind, u, err
}

// checkOptions checks the options of t, whose URL is of kind.
func (t Target) checkOptions(kind Kind) error {
	if t.Timeout <= 0 {
		return fmt.Errorf("timeout %v is not positive", t.Timeout)
	}
	switch t.IPFamily {
	case IPFamilyAny, IPFamilyIPv4, IPFamilyIPv6:
	default:
		return fmt.Errorf("unknown IP family %q (expected IPv4, IPv6 or empty)", string(t.IPFamily))
	}
	if t.TCP != nil {
		if kind != KindTCP && kind != KindTLS {
			return fmt.Errorf("tcp options on a %s target", kind)
		}
		if err := checkMaxBodyBytes(t.TCP.MaxBytes); err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
		if t.TCP.Expect != nil {
			if err := pattern.CheckWork(t.TCP.Expect, t.TCP.MaxBytes); err != nil {
				return fmt.Errorf("tcp: expect: %w", err)
			}
		}
	}
	if t.GRPC != (GRPCOptions{}) && kind != KindGRPC {
		return fmt.Errorf("grpc options on a %s target", kind)
	}
	switch {
	case kind == KindDNS && t.DNS == nil:
		return errors.New("dns target without dns options")
	case kind == KindDNS && t.Proxy != nil:
		return errors.New("a dns target cannot use a proxy")
	case kind == KindDNS:
		if err := t.DNS.validate(); err != nil {
			return err
		}
	case t.DNS != nil:
		return fmt.Errorf("dns options on a %s target", kind)
	}
	if t.Proxy != nil {
		if err := checkProxyURL(t.Proxy.URL); err != nil {
			return err
		}
	}
	if kind != KindHTTP {
		if t.Method != "" || len(t.ExpectedStatusCodes) > 0 || len(t.Headers) > 0 || t.Body != "" ||
			t.BodyMatch != nil || t.BasicAuth != nil || t.BearerToken != "" || t.ReuseConnections {
			return fmt.Errorf("HTTP options on a %s target", kind)
		}
		return nil
	}
	switch {
	case t.Method == "":
		return errors.New("missing method (" + expectedMethods + ")")
	case !slices.Contains(methods, t.Method):
		return fmt.Errorf("unsupported method %q (%s)", t.Method, expectedMethods)
	}
	for _, c := range t.ExpectedStatusCodes {
		if err := checkStatusCode(c); err != nil {
			return fmt.Errorf("expected status codes: %w", err)
		}
	}
	if m := t.BodyMatch; m != nil {
		if m.Regexp == nil {
			return errors.New("body match without a regular expression")
		}
		if err := checkMaxBodyBytes(m.MaxBytes); err != nil {
			return fmt.Errorf("body match: %w", err)
		}
		if err := pattern.CheckWork(m.Regexp, m.MaxBytes); err != nil {
			return fmt.Errorf("body match: %w", err)
		}
	}
	return nil
}

// Limits of the options parsed by ParseStatusCodes and NewBodyMatch, the
// same as the CRD's.
const (
	MinStatusCode       = 100
	MaxStatusCode       = 599
	MaxBodyMatchBytes   = 1 << 20
	MaxBodyMatchPattern = 1024
)

// ParseStatusCodes checks a list of accepted status codes (each between
// 100 and 599) and returns it sorted, without duplicates: a set, whose
// order is not a change.
func ParseStatusCodes(codes []int32) ([]int, error) {
	out := make([]int, 0, len(codes))
	for _, c := range codes {
		if err := checkStatusCode(int(c)); err != nil {
			return nil, err
		}
		out = append(out, int(c))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func checkStatusCode(c int) error {
	if c < MinStatusCode || c > MaxStatusCode {
		return fmt.Errorf("status code %d is not between %d and %d", c, MinStatusCode, MaxStatusCode)
	}
	return nil
}

// NewBodyMatch compiles an RE2 regular expression (Go syntax) into a
// BodyMatch reading at most maxBytes, which must be between 1 and
// MaxBodyMatchBytes: the caller resolves a default, NewBodyMatch does not.
// An expression whose program is over pattern.MaxProgramSize
// instructions, or too large for maxBytes (its size × maxBytes over
// pattern.MaxWork steps), is a *pattern.TooComplexError.
func NewBodyMatch(expr string, invert bool, maxBytes int64) (*BodyMatch, error) {
	switch {
	case expr == "":
		return nil, errors.New("empty regular expression")
	case len(expr) > MaxBodyMatchPattern:
		return nil, fmt.Errorf("regular expression longer than %d bytes", MaxBodyMatchPattern)
	}
	if err := checkMaxBodyBytes(maxBytes); err != nil {
		return nil, err
	}
	re, err := pattern.Compile(expr)
	if err != nil {
		return nil, err
	}
	if err := pattern.CheckWork(re, maxBytes); err != nil {
		return nil, err
	}
	return &BodyMatch{Regexp: re, Invert: invert, MaxBytes: maxBytes}, nil
}

func checkMaxBodyBytes(n int64) error {
	if n < 1 || n > MaxBodyMatchBytes {
		return fmt.Errorf("maxBodyBytes %d is not between 1 and %d", n, MaxBodyMatchBytes)
	}
	return nil
}

// Header is one request header. Its value may come from a Secret: it is a
// Secret, so that it never shows in logs.
type Header struct {
	Name  string
	Value Secret
	// Sensitive marks a value read from a Kubernetes Secret: the header is
	// not sent on after a redirect to another origin (scheme, host or
	// port).
	Sensitive bool
}

// BasicAuth is a user name and password for HTTP basic authentication.
type BasicAuth struct {
	Username Secret
	Password Secret
}

// BodyMatch judges a response body with a regular expression.
type BodyMatch struct {
	// Regexp must match the first MaxBytes bytes of the body (or, with
	// Invert, must not). Its size × MaxBytes is at most pattern.MaxWork,
	// and the match stops at the probe's deadline.
	Regexp *pattern.Regexp
	Invert bool
	// MaxBytes is how much of the body is read and searched at most,
	// between 1 and MaxBodyMatchBytes (the prober's BodyLimit does not
	// apply).
	MaxBytes int64
}

// TLSOptions configure the TLS client of a probe. The zero value verifies
// the server against the system roots, with Go's default minimum version.
type TLSOptions struct {
	// InsecureSkipVerify accepts any server certificate.
	InsecureSkipVerify bool
	// ServerName is sent in the handshake (SNI) and verified instead of the
	// URL's host name.
	ServerName string
	// RootCAs holds PEM-encoded CA certificates that replace the system
	// roots; empty uses the system roots.
	RootCAs []byte
	// MinVersion is the lowest TLS version accepted (tls.VersionTLS12, ...);
	// zero means Go's default.
	MinVersion uint16
}

// IPFamily restricts which addresses a probe connects to.
type IPFamily string

// IP families.
const (
	IPFamilyAny  IPFamily = ""
	IPFamilyIPv4 IPFamily = "IPv4"
	IPFamilyIPv6 IPFamily = "IPv6"
)

// MaxRedirects is the number of redirects a probe follows at most.
const MaxRedirects = 10

// Equal reports whether t and o describe the same probe.
func (t Target) Equal(o Target) bool {
	return t.URL == o.URL && t.Method == o.Method && t.Timeout == o.Timeout &&
		t.FollowRedirects == o.FollowRedirects && slices.Equal(t.ExpectedStatusCodes, o.ExpectedStatusCodes) &&
		slices.Equal(t.Headers, o.Headers) && t.Body == o.Body && t.BodyMatch.equal(o.BodyMatch) &&
		equalPtr(t.BasicAuth, o.BasicAuth) && t.BearerToken == o.BearerToken && t.TLS.equal(o.TLS) &&
		t.CertExpiryWarning == o.CertExpiryWarning && t.IPFamily == o.IPFamily &&
		t.ReuseConnections == o.ReuseConnections && t.TCP.equal(o.TCP) && t.GRPC == o.GRPC &&
		t.DNS.equal(o.DNS) && judgeSource(t.Judge) == judgeSource(o.Judge) && equalPtr(t.Proxy, o.Proxy) &&
		slices.Equal(t.EgressAllow, o.EgressAllow)
}

func (m *BodyMatch) equal(o *BodyMatch) bool {
	if m == nil || o == nil {
		return m == o
	}
	return m.Regexp.String() == o.Regexp.String() && m.Invert == o.Invert && m.MaxBytes == o.MaxBytes
}

func (t TLSOptions) equal(o TLSOptions) bool {
	return t.InsecureSkipVerify == o.InsecureSkipVerify && t.ServerName == o.ServerName &&
		bytes.Equal(t.RootCAs, o.RootCAs) && t.MinVersion == o.MinVersion
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Accepts reports whether code is an accepted final status code.
func (t Target) Accepts(code int) bool {
	if len(t.ExpectedStatusCodes) == 0 {
		return code >= 200 && code < 400
	}
	return slices.Contains(t.ExpectedStatusCodes, code)
}
