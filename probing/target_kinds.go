package probing

import (
	"errors"
	"fmt"
	"slices"

	"github.com/networkio/webchecker/probing/pattern"
)

// TCPOptions are the query and response of a tcp or tls probe, as the
// blackbox exporter's query_response: a banner to wait for (SMTP, Redis,
// SSH, ...) or a request to send and the reply to expect.
type TCPOptions struct {
	// Send is written to the connection once it is up (after the TLS
	// handshake for tls), as is; empty sends nothing.
	Send string
	// Expect, when set, must match what the server sends: the probe reads
	// until it matches, the server closes the connection, MaxBytes bytes
	// were read or the timeout expires (the last three fail the probe with
	// ReasonUnexpectedReply, or ReasonTimeout). Its size × MaxBytes is at
	// most pattern.MaxWork (NewTarget checks it); see readReply for how often it is
	// matched.
	Expect *pattern.Regexp
	// MaxBytes is how much of the reply is read at most, between 1 and
	// MaxBodyMatchBytes.
	MaxBytes int64
}

func (o *TCPOptions) equal(p *TCPOptions) bool {
	if o == nil || p == nil {
		return o == p
	}
	return o.Send == p.Send && regexpString(o.Expect) == regexpString(p.Expect) && o.MaxBytes == p.MaxBytes
}

// GRPCOptions are the health check of a grpc or grpcs probe.
type GRPCOptions struct {
	// Service is the service name sent in the
	// grpc.health.v1.HealthCheckRequest; empty asks about the server as a
	// whole.
	Service string
}

// DNSOptions are the query of a dns probe and how to judge its response.
type DNSOptions struct {
	// Name is the name queried (made fully qualified). Required.
	Name string
	// Type is the record type: one of DNSTypes. Required.
	Type string
	// Transport is "udp" or "tcp". Required. A truncated UDP response is
	// judged as it is (its rcode and the records it has).
	Transport string
	// RecursionDesired sets the RD bit of the query.
	RecursionDesired bool
	// Rcodes lists the accepted response codes ("NOERROR", "NXDOMAIN",
	// ...); empty accepts only NOERROR.
	Rcodes []string
	// AnswerMatch are regular expressions that must each match at least
	// one record of the answer section, in zone-file form. Their matching
	// work in one probe is bounded (see judgeDNS).
	AnswerMatch []*pattern.Regexp
}

// DNSTypes are the record types a dns probe may query.
var DNSTypes = []string{"A", "AAAA", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT", "CAA"}

// DNSRcodes are the response codes a dns probe may accept.
var DNSRcodes = []string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"}

func (o *DNSOptions) equal(p *DNSOptions) bool {
	if o == nil || p == nil {
		return o == p
	}
	return o.Name == p.Name && o.Type == p.Type && o.Transport == p.Transport &&
		o.RecursionDesired == p.RecursionDesired && slices.Equal(o.Rcodes, p.Rcodes) &&
		slices.EqualFunc(o.AnswerMatch, p.AnswerMatch, func(a, b *pattern.Regexp) bool { return regexpString(a) == regexpString(b) })
}

func (o *DNSOptions) validate() error {
	switch {
	case o.Name == "":
		return errors.New("dns: missing name")
	case !slices.Contains(DNSTypes, o.Type):
		return fmt.Errorf("dns: unsupported record type %q", o.Type)
	case o.Transport != "udp" && o.Transport != "tcp":
		return fmt.Errorf("dns: transport %q is not udp or tcp", o.Transport)
	}
	for _, r := range o.Rcodes {
		if !slices.Contains(DNSRcodes, r) {
			return fmt.Errorf("dns: unknown rcode %q", r)
		}
	}
	for _, re := range o.AnswerMatch {
		if re == nil {
			return errors.New("dns: answer match without a regular expression")
		}
	}
	return nil
}

// Proxy is the HTTP proxy a probe goes through. An http target's request
// is sent to it in absolute form; every other connection (https, tcp, tls,
// grpc, grpcs) is tunnelled with CONNECT. The egress policy judges the
// proxy's address, not the target's: reaching the target is the proxy's
// job. dns probes cannot go through a proxy.
type Proxy struct {
	// URL is http://host:port (or https://host:port for a proxy reached
	// over TLS), without credentials.
	URL string
	// Username and Password, when Username is not empty, are sent as
	// Proxy-Authorization (basic).
	Username, Password Secret
}

// Validate reports why p cannot be a probe's proxy: a URL that is not
// http://host:port or https://host:port, or that holds credentials (they
// are given apart), a path, a query or a fragment. Messages never contain
// the URL's password.
func (p *Proxy) Validate() error { return checkProxyURL(p.URL) }

func regexpString(re *pattern.Regexp) string {
	if re == nil {
		return ""
	}
	return re.String()
}

func judgeSource(j Judge) string {
	if j == nil {
		return ""
	}
	return j.Source()
}
