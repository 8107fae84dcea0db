package probing

import (
	"bytes"
	"net/netip"
	"slices"
	"time"

	"github.com/networkio/webchecker/probing/pattern"
)

// TargetSpec describes what to probe and how to judge the answer: the
// input of NewTarget, which checks it once and returns the Target that
// probers probe. It holds resolved values: NewTarget applies no defaults.
//
// Its URL's scheme chooses the Kind of probe (see KindOfScheme). The
// fields from Method to ReuseConnections are about HTTP: only http and
// https targets may set them (Method is required there); TLS and
// CertExpiryWarning apply to every kind over TLS (https, tls, grpcs); TCP,
// GRPC and DNS belong to their kinds; Judge and Proxy apply to every kind
// (but a dns target cannot use a proxy).
type TargetSpec struct {
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
	// between MinStatusCode and MaxStatusCode; their order and repeats do
	// not matter (NewTarget keeps them as a sorted set). When empty, any
	// 2xx or 3xx code is accepted.
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
	// OAuth2, when set, fetches the bearer token with the client
	// credentials grant (see OAuth2); not with BasicAuth or BearerToken.
	OAuth2 *OAuth2
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
	// with ReasonConditionFailed. It must be safe for concurrent use.
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
	// DNSServer, when not empty, is the DNS server (an IP address and a
	// port, such as 127.0.0.53:53 or [::1]:53) that resolves the names of
	// this target's probes instead of ProberOptions.DNSServer. The egress
	// policy judges it with the target's EgressAllow: a KindProber fails
	// every probe of a target whose DNS server it denies with
	// ReasonEgressDenied, and the resolver's own connections are checked
	// too.
	DNSServer string
	// Addresses says which addresses of the URL's host name the probe
	// connects to: AddressesFirst (the default) as a client does, or every
	// address (at most MaxAddresses) at once within Timeout, each judged by
	// the egress policy, the verdict following the mode (see
	// AddressMode); each address's own result is in Result.Addresses. A
	// KindProber probes them; not with a Proxy (which resolves the name
	// itself) nor with ReuseConnections (a kept connection goes to one
	// address).
	Addresses AddressMode
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
	// ClientCertificate (PEM: the certificate, then its intermediates) and
	// ClientKey (PEM) are presented when the server asks for a client
	// certificate (mutual TLS); both or neither. A KindProber warns
	// before the certificate expires (see Result.CertificateWarning).
	ClientCertificate []byte
	ClientKey         Secret
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

// equal reports whether s and o describe the same probe.
func (s *TargetSpec) equal(o *TargetSpec) bool {
	return s.URL == o.URL && s.Method == o.Method && s.Timeout == o.Timeout &&
		s.FollowRedirects == o.FollowRedirects && slices.Equal(s.ExpectedStatusCodes, o.ExpectedStatusCodes) &&
		slices.Equal(s.Headers, o.Headers) && s.Body == o.Body && s.BodyMatch.equal(o.BodyMatch) &&
		equalPtr(s.BasicAuth, o.BasicAuth) && s.BearerToken == o.BearerToken && s.TLS.equal(o.TLS) &&
		s.CertExpiryWarning == o.CertExpiryWarning && s.IPFamily == o.IPFamily &&
		s.ReuseConnections == o.ReuseConnections && s.TCP.equal(o.TCP) && s.GRPC == o.GRPC &&
		s.DNS.equal(o.DNS) && judgeSource(s.Judge) == judgeSource(o.Judge) && equalPtr(s.Proxy, o.Proxy) &&
		slices.Equal(s.EgressAllow, o.EgressAllow) && s.DNSServer == o.DNSServer && s.OAuth2.equal(o.OAuth2) &&
		s.Addresses == o.Addresses
}

// clone returns a copy of s that shares nothing mutable with it: its
// slices and the options its pointers point to are copied (compiled
// regular expressions and the Judge, which never change, are shared).
func (s TargetSpec) clone() TargetSpec {
	s.ExpectedStatusCodes = slices.Clone(s.ExpectedStatusCodes)
	s.Headers = slices.Clone(s.Headers)
	s.BodyMatch = clonePtr(s.BodyMatch)
	s.BasicAuth = clonePtr(s.BasicAuth)
	s.TLS.RootCAs = slices.Clone(s.TLS.RootCAs)
	s.TLS.ClientCertificate = slices.Clone(s.TLS.ClientCertificate)
	s.TCP = clonePtr(s.TCP)
	if s.DNS != nil {
		dns := *s.DNS
		dns.Rcodes, dns.AnswerMatch = slices.Clone(dns.Rcodes), slices.Clone(dns.AnswerMatch)
		s.DNS = &dns
	}
	s.Proxy = clonePtr(s.Proxy)
	if s.OAuth2 != nil {
		o := *s.OAuth2
		o.Scopes = slices.Clone(o.Scopes)
		s.OAuth2 = &o
	}
	s.EgressAllow = slices.Clone(s.EgressAllow)
	return s
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func (m *BodyMatch) equal(o *BodyMatch) bool {
	if m == nil || o == nil {
		return m == o
	}
	return m.Regexp.String() == o.Regexp.String() && m.Invert == o.Invert && m.MaxBytes == o.MaxBytes
}

func (t TLSOptions) equal(o TLSOptions) bool {
	return t.InsecureSkipVerify == o.InsecureSkipVerify && t.ServerName == o.ServerName &&
		bytes.Equal(t.RootCAs, o.RootCAs) && t.MinVersion == o.MinVersion &&
		bytes.Equal(t.ClientCertificate, o.ClientCertificate) && t.ClientKey == o.ClientKey
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// accepts reports whether code is an accepted final status code.
func (s *TargetSpec) accepts(code int) bool {
	if len(s.ExpectedStatusCodes) == 0 {
		return code >= 200 && code < 400
	}
	return slices.Contains(s.ExpectedStatusCodes, code)
}
