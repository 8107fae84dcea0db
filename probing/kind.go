package probing

import "strings"

// Kind is the protocol a Target probes. It is chosen by the scheme of its
// URL (see KindOfScheme), so that a WebChecker's spec.host says what it
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

// defaultPorts are the ports of the schemes that have one; tcp, tls, grpc
// and grpcs have none, and their URLs must name a port.
var defaultPorts = map[string]string{"http": "80", "https": "443", "dns": "53"}
