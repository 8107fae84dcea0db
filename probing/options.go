package probing

import (
	"time"

	"github.com/networkio/webchecker/probing/egress"
)

// Defaults of ProberOptions.
const (
	DefaultBodyLimit    int64 = 64 << 10
	DefaultMaxIdleConns       = 256
	// DefaultMaxIdleConnsPerHost is as many connections as the scheduler
	// runs probes at once by default: checkers of one host that reuse
	// connections keep the connections their probes opened instead of
	// closing all but two after every burst (and opening them again).
	DefaultMaxIdleConnsPerHost = 64
	DefaultIdleConnTimeout     = 90 * time.Second
	DefaultUserAgent           = "webchecker"
)

// MaxResponseHeaderBytes bounds the status line and headers of a response
// (http.Transport.MaxResponseHeaderBytes): a response whose headers are
// larger fails with ReasonConnectionFailed instead of being read into
// memory.
const MaxResponseHeaderBytes = 64 << 10

// ProberOptions configures an HTTPProber. The zero value is valid: every
// zero (or negative) field takes its default.
type ProberOptions struct {
	// DNSServer is the DNS server (host:port) that host names of targets are
	// resolved with (see NewResolver). Empty means the system resolver.
	DNSServer string
	// BodyLimit is the number of response body bytes read at most from a
	// target without a BodyMatch (a BodyMatch reads its own MaxBytes); the
	// rest of the body is discarded by closing the connection. Default
	// 64 KiB.
	BodyLimit int64
	// MaxIdleConns bounds the idle keep-alive connections kept across all
	// hosts, per transport (see HTTPProber), for targets with
	// ReuseConnections; other probes keep no connection. Default 256.
	MaxIdleConns int
	// MaxIdleConnsPerHost bounds the idle keep-alive connections kept per
	// host, for targets with ReuseConnections. Default 64.
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes keep-alive connections idle for longer, for
	// targets with ReuseConnections. Default 90s.
	IdleConnTimeout time.Duration
	// UserAgent is the User-Agent header of every probe request. Default
	// "webchecker".
	UserAgent string
	// Egress decides which addresses probes may connect to; it is checked
	// on every connection, after name resolution and on redirects. Nil
	// allows every address.
	Egress *egress.Policy
}

// dnsServerOf is the DNS server that resolves t's names: its own, or
// the prober's; empty for the system resolver.
func (o ProberOptions) dnsServerOf(t *builtTarget) string {
	if t.DNSServer != "" {
		return t.DNSServer
	}
	return o.DNSServer
}

// withDefaults returns o with every unset field set to its default.
func (o ProberOptions) withDefaults() ProberOptions {
	if o.BodyLimit <= 0 {
		o.BodyLimit = DefaultBodyLimit
	}
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = DefaultMaxIdleConns
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = DefaultIdleConnTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	return o
}
