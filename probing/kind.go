package probing

import (
	"net/url"
	"strings"
)

// Kind is the protocol a Target probes. It is chosen by the scheme of the
// Target's URL (see KindOf), so that a WebChecker's spec.host says what it
// probes: http:// and https:// (or no scheme) probe HTTP, tcp:// connects,
// tls:// connects and shakes hands, grpc:// and grpcs:// call the standard
// gRPC health service, dns:// queries a DNS server.
type Kind string

// Probe kinds.
const (
	KindHTTP Kind = "http"
	KindTCP  Kind = "tcp"
	KindTLS  Kind = "tls"
	KindGRPC Kind = "grpc"
	KindDNS  Kind = "dns"
)

// Kinds lists every probe kind.
var Kinds = []Kind{KindHTTP, KindTCP, KindTLS, KindGRPC, KindDNS}

// schemes maps every URL scheme a Target may use to its kind.
var schemes = map[string]Kind{
	"http": KindHTTP, "https": KindHTTP,
	"tcp": KindTCP, "tls": KindTLS,
	"grpc": KindGRPC, "grpcs": KindGRPC,
	"dns": KindDNS,
}

// expectedSchemes names the schemes of schemes in messages.
const expectedSchemes = "http, https, tcp, tls, grpc, grpcs or dns"

// KindOfScheme returns the kind of a URL scheme (case-insensitive), and
// false for a scheme no prober knows.
func KindOfScheme(scheme string) (Kind, bool) {
	k, ok := schemes[strings.ToLower(scheme)]
	return k, ok
}

// KindOf returns the kind of a target URL, "" when it does not parse or
// has a scheme no prober knows.
func KindOf(rawURL string) Kind {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	k, _ := KindOfScheme(u.Scheme)
	return k
}

// UsesTLS reports whether a target URL's scheme speaks TLS (https, tls,
// grpcs), so that its certificate is checked and reported.
func UsesTLS(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "https", "tls", "grpcs":
		return true
	}
	return false
}

// defaultPorts are the ports of the schemes that have one; tcp, tls, grpc
// and grpcs have none, and their URLs must name a port.
var defaultPorts = map[string]string{"http": "80", "https": "443", "dns": "53"}
