package probing

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
	"unique"
	"unsafe"

	"golang.org/x/net/dns/dnsmessage"
)

// Target is a TargetSpec that NewTarget checked, with what probing it
// needs worked out once: its Kind, its parsed URL, the address it
// connects to, its TLS client configuration. It is immutable, and cheap
// to copy (it points to what NewTarget built), so that a scheduler can
// hand the same Target to every probe of a check: probers neither parse
// nor validate it again.
//
// The zero Target was not built: every prober gives it
// ReasonInvalidTarget.
type Target struct {
	b *builtTarget
}

// builtTarget is what NewTarget builds: never changed afterwards.
type builtTarget struct {
	TargetSpec // a copy that shares nothing mutable with the caller's

	kind Kind
	// url is TargetSpec.URL parsed, the colon of an empty port removed
	// from its host (as http.NewRequest does). Probes copy it before
	// handing it to anything that might change it.
	url *url.URL
	// redacted is the URL for messages, its password replaced by "***".
	redacted string
	// addr is the host:port a tcp, tls, grpc or dns probe connects to
	// (port 53 by default for dns); empty for http.
	addr string
	// tls is the TLS client configuration of a tls or grpcs target, its
	// ServerName defaulted to the URL's host name; shared by the probes,
	// which never change it. nil for the other kinds.
	tls *tls.Config
	// dns is what a dns target's probes send and say; nil for the other
	// kinds (a question is 260 bytes: every checker would carry one).
	dns *builtDNS
	// clientExpiry is when TLS.ClientCertificate expires; nil without one.
	clientExpiry *time.Time
	// transport is the key of the transport of an http or https target's
	// probes (see keyOf), worked out once: a probe neither copies its CA
	// bundle nor hashes its proxy's credentials.
	transport transportKey
	// rootCAs and clientCertificate hold TLS.RootCAs and
	// TLS.ClientCertificate, which share their bytes (see interned): the
	// checkers that trust one CA bundle keep one copy of it.
	rootCAs, clientCertificate unique.Handle[string]
}

// intern makes b's CA bundle and client certificate share the bytes of
// every other target's equal ones, and works out its transport key. The
// bytes are never written to: Spec copies them.
func (b *builtTarget) intern() {
	b.rootCAs = unique.Make(string(b.TLS.RootCAs))
	b.clientCertificate = unique.Make(string(b.TLS.ClientCertificate))
	b.TLS.RootCAs = interned(b.rootCAs)
	b.TLS.ClientCertificate = interned(b.clientCertificate)
	b.transport = keyOf(&b.TargetSpec)
	b.transport.rootCAs, b.transport.clientCertificate = b.rootCAs.Value(), b.clientCertificate.Value()
}

// interned returns the bytes of h's string, without a copy, nil for the
// empty string. They must not be changed.
func interned(h unique.Handle[string]) []byte {
	s := h.Value()
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// builtDNS is what NewTarget works out for a dns target.
type builtDNS struct {
	// question is the question its probes ask, prefix the start of their
	// messages.
	question dnsmessage.Question
	prefix   string
}

// NewTarget checks spec and returns the Target that probes it, or why it
// cannot be probed: a URL that is not an absolute URL of a known scheme
// with a host, a timeout that is not positive, an unknown IP family,
// options of another kind than the URL's (HTTP options on a tcp target,
// ...), a dns target without valid DNS options (a name that is not a
// domain name included) or with a proxy, a proxy that does not Validate, a
// CA bundle (TLS.RootCAs) without a PEM-encoded certificate; for http and
// https a method other than GET, HEAD, POST, PUT and OPTIONS, a status
// code out of range, or a body match without a regular expression, with
// an empty one or one too large for its MaxBytes (a
// *pattern.TooComplexError, wrapped), or with MaxBytes outside [1,
// MaxBodyMatchBytes]. It resolves nothing: an empty Method is an error,
// not GET. Messages start with "invalid target" and never contain the
// URL's password.
//
// The Target keeps a copy of spec: changing spec afterwards does not
// change it.
func NewTarget(spec TargetSpec) (Target, error) {
	b, err := build(spec.clone())
	if err != nil {
		return Target{}, fmt.Errorf("invalid target: %w", err)
	}
	return Target{b: b}, nil
}

// build checks spec, which it owns, and works out what probing it needs.
func build(spec TargetSpec) (*builtTarget, error) {
	u, kind, err := parseTargetURL(spec.URL)
	if err != nil {
		return nil, err
	}
	if err := spec.checkOptions(kind); err != nil {
		return nil, err
	}
	u.Host = strings.TrimSuffix(u.Host, ":")
	b := &builtTarget{TargetSpec: spec, kind: kind, url: u, redacted: redactURL(u)}
	b.intern()
	if b.redacted == spec.URL {
		b.redacted = b.URL // shared with the spec's, not a copy of its own
	}
	if len(spec.TLS.ClientCertificate) > 0 || spec.TLS.ClientKey != "" {
		pair, err := spec.TLS.clientPair()
		if err != nil {
			return nil, fmt.Errorf("TLS settings: %w", err)
		}
		b.clientExpiry = &pair.Leaf.NotAfter
	}
	switch kind {
	case KindHTTP:
		if _, err := spec.TLS.tlsConfig(); err != nil {
			return nil, fmt.Errorf("TLS settings: %w", err)
		}
		return b, nil
	case KindDNS:
		b.addr = net.JoinHostPort(u.Hostname(), cmp.Or(u.Port(), defaultPorts["dns"]))
		q, err := dnsQuestion(spec.DNS)
		if err != nil {
			return nil, err
		}
		b.dns = &builtDNS{question: q, prefix: fmt.Sprintf("dns query %q %s to %q: ", fqdn(spec.DNS.Name), spec.DNS.Type, "dns://"+b.addr)}
		return b, nil
	}
	// tcp, tls, grpc and grpcs: the URL names the port (parseTargetURL).
	b.addr = net.JoinHostPort(u.Hostname(), u.Port())
	if kind == KindTLS || strings.EqualFold(u.Scheme, "grpcs") {
		cfg, err := spec.TLS.tlsConfig()
		if err != nil {
			return nil, fmt.Errorf("TLS settings: %w", err)
		}
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname() // as net/http does; an IP address is verified, not sent
		}
		b.tls = cfg
	}
	return b, nil
}

// errNotBuilt is the message of a probe of the zero Target.
var errNotBuilt = errors.New("invalid target: not built with NewTarget")

// forProber returns what NewTarget built of t for the prober called name,
// which probes the targets of kinds; an error (the message of
// ReasonInvalidTarget) for the zero Target or a target of another kind.
func (t Target) forProber(name string, kinds ...Kind) (*builtTarget, error) {
	switch {
	case t.b == nil:
		return nil, errNotBuilt
	case !slices.Contains(kinds, t.b.kind):
		return nil, fmt.Errorf("invalid target: the %s prober cannot probe %s targets", name, t.b.kind)
	}
	return t.b, nil
}

// IsZero reports whether t is the zero Target, which NewTarget never
// returns: a target not built (or not kept), which no prober probes.
func (t Target) IsZero() bool { return t.b == nil }

// Kind returns the kind of probe t's URL chooses; "" for the zero Target.
func (t Target) Kind() Kind {
	if t.b == nil {
		return ""
	}
	return t.b.kind
}

// URL returns the URL t probes, as its TargetSpec gave it; "" for the
// zero Target. It may hold a password: it is not for messages.
func (t Target) URL() string {
	if t.b == nil {
		return ""
	}
	return t.b.URL
}

// UsesTLS reports whether t speaks TLS (https, tls and grpcs URLs), so
// that its certificate is checked and reported.
func (t Target) UsesTLS() bool {
	if t.b == nil {
		return false
	}
	switch t.b.url.Scheme {
	case "https", "tls", "grpcs":
		return true
	}
	return false
}

// AddressMode returns which addresses of its name a probe of t connects
// to (TargetSpec.Addresses); AddressesFirst for the zero Target.
func (t Target) AddressMode() AddressMode {
	if t.b == nil {
		return AddressesFirst
	}
	return t.b.Addresses
}

// CertExpiryWarning returns how long before its certificate chain expires
// a probe of t warns (TargetSpec.CertExpiryWarning); zero for the zero
// Target.
func (t Target) CertExpiryWarning() time.Duration {
	if t.b == nil {
		return 0
	}
	return t.b.CertExpiryWarning
}

// Spec returns a copy of the TargetSpec t was built from, with its
// expected status codes sorted into a set; the zero TargetSpec for the
// zero Target. Changing the copy does not change t.
func (t Target) Spec() TargetSpec {
	if t.b == nil {
		return TargetSpec{}
	}
	return t.b.TargetSpec.clone()
}

// Equal reports whether t and o describe the same probe (two zero Targets
// are equal).
func (t Target) Equal(o Target) bool {
	if t.b == nil || o.b == nil {
		return t.b == o.b
	}
	return t.b == o.b || t.b.equal(&o.b.TargetSpec)
}

// BuiltFrom reports whether t was built from a TargetSpec equal to spec
// (its expected status codes taken as a set): NewTarget(spec) would
// build the same Target, and t can stand for it.
func (t Target) BuiltFrom(spec TargetSpec) bool {
	if t.b == nil {
		return false
	}
	spec.ExpectedStatusCodes = slices.Compact(slices.Sorted(slices.Values(spec.ExpectedStatusCodes)))
	return t.b.equal(&spec)
}

// Accepts reports whether code is an accepted final status code of t.
func (t Target) Accepts(code int) bool {
	return t.b != nil && t.b.accepts(code)
}
