package checkspec

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
)

// RegexTooComplexError is a regular expression of the spec (bodyMatch,
// tcp.expect, dns.answerMatch, or a pattern of matches() in a condition)
// over the bounds of the pattern package: a program over
// pattern.MaxProgramSize instructions, or too large for the input it is
// matched on. The checker is not probed, and Ready says why (reason
// RegexTooComplex) until the spec changes.
type RegexTooComplexError struct {
	// Message names the field and the limit.
	Message string
}

func (e *RegexTooComplexError) Error() string { return e.Message }

// compilePattern compiles the regular expression of field, refused with a
// *RegexTooComplexError over the pattern package's bounds; inputField
// and inputBytes, when set, are the field and size of the input it is
// matched on.
func compilePattern(field, expr, inputField string, inputBytes int64) (*pattern.Regexp, error) {
	re, err := pattern.Compile(expr)
	if err == nil && inputBytes > 0 {
		if err = pattern.CheckWork(re, inputBytes); err != nil {
			return nil, &RegexTooComplexError{Message: probing.BoundMessage(fmt.Sprintf("%s with %s %d: %v", field, inputField, inputBytes, err))}
		}
	}
	switch {
	case errors.Is(err, pattern.ErrTooComplex):
		return nil, &RegexTooComplexError{Message: probing.BoundMessage(fmt.Sprintf("%s: %v", field, err))}
	case err != nil:
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return re, nil
}

// kindOf returns the probe kind that spec.host's scheme chooses (no scheme
// means http).
func kindOf(host string) (probing.Kind, error) {
	scheme, _, found := strings.Cut(host, "://")
	if !found {
		return probing.KindHTTP, nil
	}
	kind, ok := probing.KindOfScheme(scheme)
	if !ok {
		return "", fmt.Errorf("invalid target: host %q: unsupported scheme %q", host, scheme)
	}
	return kind, nil
}

// setKindOptions sets the options of target that belong to its kind, from
// spec, with their defaults resolved. A field of another kind is an error
// (the API server rejects it; an object stored before a stricter CRD can
// still have one).
func setKindOptions(kind probing.Kind, spec *webcheckerv1alpha1.WebCheckerSpec, target *probing.TargetSpec) error {
	if kind != probing.KindHTTP {
		if field := httpOnlyField(spec); field != "" {
			return fmt.Errorf("%s is only for http and https targets", field)
		}
	}
	if spec.TCP != nil && kind != probing.KindTCP && kind != probing.KindTLS {
		return fmt.Errorf("tcp is only for tcp and tls targets")
	}
	if spec.GRPC != nil && kind != probing.KindGRPC {
		return fmt.Errorf("grpc is only for grpc and grpcs targets")
	}
	if (spec.DNS != nil) != (kind == probing.KindDNS) {
		return fmt.Errorf("dns is required for dns targets, and only for them")
	}
	switch kind {
	case probing.KindHTTP:
		return setHTTPOptions(spec, target)
	case probing.KindTCP, probing.KindTLS:
		if o := spec.TCP; o != nil {
			tcp := &probing.TCPOptions{Send: o.Send, MaxBytes: ptr.Deref(o.MaxReplyBytes, webcheckerv1alpha1.DefaultMaxReplyBytes)}
			if o.Expect != "" {
				re, err := compilePattern("spec.tcp.expect", o.Expect, "spec.tcp.maxReplyBytes", tcp.MaxBytes)
				if err != nil {
					return err
				}
				tcp.Expect = re
			}
			target.TCP = tcp
		}
	case probing.KindGRPC:
		if spec.GRPC != nil {
			target.GRPC = probing.GRPCOptions{Service: spec.GRPC.Service}
		}
	case probing.KindDNS:
		return setDNSOptions(spec.DNS, target)
	}
	return nil
}

// httpOnlyField names the first HTTP-only field spec sets, "" for none.
func httpOnlyField(spec *webcheckerv1alpha1.WebCheckerSpec) string {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"path", spec.Path != ""}, {"method", spec.Method != ""}, {"headers", len(spec.Headers) > 0},
		{"body", spec.Body != ""}, {"bodyMatch", spec.BodyMatch != nil},
		{"basicAuthSecretRef", spec.BasicAuthSecretRef != nil}, {"bearerTokenSecretRef", spec.BearerTokenSecretRef != nil},
		{"expectedStatusCodes", len(spec.ExpectedStatusCodes) > 0}, {"followRedirects", spec.FollowRedirects != nil},
		{"reuseConnections", spec.ReuseConnections},
	} {
		if f.set {
			return f.name
		}
	}
	return ""
}

// setHTTPOptions sets the options of an http or https target.
func setHTTPOptions(spec *webcheckerv1alpha1.WebCheckerSpec, target *probing.TargetSpec) error {
	target.Method = cmp.Or(spec.Method, webcheckerv1alpha1.DefaultMethod)
	target.ExpectedStatusCodes = nil
	for _, c := range spec.ExpectedStatusCodes {
		target.ExpectedStatusCodes = append(target.ExpectedStatusCodes, int(c))
	}
	target.FollowRedirects = ptr.Deref(spec.FollowRedirects, webcheckerv1alpha1.DefaultFollowRedirects)
	target.Body = spec.Body
	target.ReuseConnections = spec.ReuseConnections
	if m := spec.BodyMatch; m != nil {
		maxBytes := ptr.Deref(m.MaxBodyBytes, webcheckerv1alpha1.DefaultMaxBodyBytes)
		re, err := compilePattern("spec.bodyMatch.regex", m.Regex, "spec.bodyMatch.maxBodyBytes", maxBytes)
		if err != nil {
			return err
		}
		target.BodyMatch = &probing.BodyMatch{Regexp: re, Invert: m.Invert, MaxBytes: maxBytes}
	}
	return nil
}

// setDNSOptions sets the query of a dns target.
func setDNSOptions(o *webcheckerv1alpha1.DNSProbe, target *probing.TargetSpec) error {
	dns := &probing.DNSOptions{
		Name:             o.Name,
		Type:             cmp.Or(o.Type, webcheckerv1alpha1.DefaultDNSType),
		Transport:        cmp.Or(o.Transport, webcheckerv1alpha1.DefaultDNSTransport),
		RecursionDesired: ptr.Deref(o.RecursionDesired, webcheckerv1alpha1.DefaultDNSRecursionDesired),
		Rcodes:           o.ValidRcodes,
	}
	for i, expr := range o.AnswerMatch {
		re, err := compilePattern(fmt.Sprintf("spec.dns.answerMatch[%d]", i), expr, "", 0)
		if err != nil {
			return err
		}
		dns.AnswerMatch = append(dns.AnswerMatch, re)
	}
	target.DNS = dns
	return nil
}

// proxyFor returns the proxy of spec.proxy, with its credentials read from
// their Secret; nil without spec.proxy.
func proxyFor(spec *webcheckerv1alpha1.WebCheckerSpec, secrets SecretValues) (*probing.Proxy, error) {
	p := spec.Proxy
	if p == nil {
		return nil, nil
	}
	u, err := url.Parse(p.URL)
	if err != nil || u.User != nil {
		return nil, fmt.Errorf("invalid target: spec.proxy.url must be http(s)://host:port without credentials")
	}
	proxy := &probing.Proxy{URL: p.URL}
	if ref := p.CredentialsSecretRef; ref != nil {
		if proxy.Username, err = secrets.line("spec.proxy.credentialsSecretRef", ref.Name, corev1.BasicAuthUsernameKey); err != nil {
			return nil, err
		}
		if proxy.Password, err = secrets.line("spec.proxy.credentialsSecretRef", ref.Name, corev1.BasicAuthPasswordKey); err != nil {
			return nil, err
		}
	}
	return proxy, nil
}
