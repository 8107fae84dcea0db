package probing_test

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// A server that closes or resets the connection before it answers gets one
// outcome, whatever the timing: whether the client meets the end of the
// stream, a reset on reading, a reset of its write or of its connect
// depends on the scheduler alone, and a message that changed between
// identical probes would rewrite the checker's status at every probe.
func TestServerClosesBeforeAnswering(t *testing.T) {
	t.Parallel()
	cert := probetest.NewCertificate(t, "healthy.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	tlsListener := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert.TLS}, NextProtos: []string{"h2", "http/1.1"}})
	}
	redirector := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	// The servers; the TLS ones shake hands first.
	servers := map[string]string{
		"closes at once":                 closingServer(t, nil, func(net.Conn) {}),
		"resets at once":                 closingServer(t, nil, func(c net.Conn) { _ = c.(*net.TCPConn).SetLinger(0) }),
		"closes after reading a little":  closingServer(t, nil, func(c net.Conn) { _, _ = c.Read(make([]byte, 8)) }),
		"closes after its TLS handshake": closingServer(t, tlsListener(), func(c net.Conn) { _ = c.(*tls.Conn).Handshake() }),
		"closes unread after a TLS handshake": closingServer(t, tlsListener(), func(c net.Conn) {
			_ = c.(*tls.Conn).Handshake()
			time.Sleep(time.Millisecond) // the client's first bytes arrive unread: a reset
		}),
	}
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	const probesEach = 25
	for server, addr := range servers {
		for name, p := range closedProbes(redirector.URL) {
			t.Run(server+"/"+name, func(t *testing.T) {
				t.Parallel()
				want := p.want
				if (server == "closes after its TLS handshake" || server == "closes unread after a TLS handshake") && p.wantTLS.Reason != "" {
					want = p.wantTLS
				}
				want.Message = strings.ReplaceAll(want.Message, "{addr}", addr)
				want.Message = strings.ReplaceAll(want.Message, "{escaped addr}", url.QueryEscape(addr))
				outcomes := map[string]int{}
				for range probesEach {
					res := probe(t.Context(), prober, p.target(addr))
					outcomes[strconv.Quote(string(res.Reason))+" "+res.Message]++
				}
				assert.Equal(t, map[string]int{strconv.Quote(string(want.Reason)) + " " + want.Message: probesEach}, outcomes)
			})
		}
	}
}

// closedTarget is a target of url for TestServerClosesBeforeAnswering:
// the method HTTP needs, certificates not verified.
func closedTarget(url string) probing.TargetSpec {
	target := probing.TargetSpec{URL: url, Timeout: relaxedTimeout, TLS: probing.TLSOptions{InsecureSkipVerify: true}}
	if strings.HasPrefix(url, "http") {
		target.Method = http.MethodGet
	}
	return target
}

// pingTarget is closedTarget with a query and the reply it expects.
func pingTarget(url string) probing.TargetSpec {
	target := closedTarget(url)
	target.TCP = expectReply("PING\r\n", `^\+PONG`, 1024)
	return target
}

// closedProbe is a probe of TestServerClosesBeforeAnswering and its outcome
// on a server that closes: want, or wantTLS on the TLS servers.
type closedProbe struct {
	target        func(addr string) probing.TargetSpec
	want, wantTLS probing.Result
}

// closedProbes are the probes of TestServerClosesBeforeAnswering;
// redirector redirects to its "to" query parameter.
func closedProbes(redirector string) map[string]closedProbe {
	const closed = "the server closed the connection before answering"
	return map[string]closedProbe{
		"http": {
			target: func(addr string) probing.TargetSpec { return closedTarget("http://" + addr + "/") },
			want:   probing.Result{Reason: probing.ReasonConnectionFailed, Message: `Get "http://{addr}/": ` + closed},
		},
		"http, reusing connections": {
			target: func(addr string) probing.TargetSpec {
				target := closedTarget("http://" + addr + "/")
				target.ReuseConnections = true
				return target
			},
			want: probing.Result{Reason: probing.ReasonConnectionFailed, Message: `Get "http://{addr}/": ` + closed},
		},
		"http, redirected to the server": {
			target: func(addr string) probing.TargetSpec {
				target := closedTarget(redirector + "/?to=" + url.QueryEscape("http://"+addr+"/"))
				target.FollowRedirects = true
				return target
			},
			// The target's URL, not the redirect's (the server's choice).
			want: probing.Result{Reason: probing.ReasonConnectionFailed,
				Message: `Get "` + redirector + `/?to=http%3A%2F%2F{escaped addr}%2F" (after a redirect): ` + closed},
		},
		"https": {
			target: func(addr string) probing.TargetSpec { return closedTarget("https://" + addr + "/") },
			want:   probing.Result{Reason: probing.ReasonConnectionFailed, Message: `Get "https://{addr}/": ` + closed},
		},
		"grpc": {
			target: func(addr string) probing.TargetSpec { return closedTarget("grpc://" + addr) },
			want:   probing.Result{Reason: probing.ReasonConnectionFailed, Message: `health check of "grpc://{addr}": ` + closed},
		},
		"grpcs": {
			target: func(addr string) probing.TargetSpec { return closedTarget("grpcs://" + addr) },
			want:   probing.Result{Reason: probing.ReasonConnectionFailed, Message: `health check of "grpcs://{addr}": ` + closed},
		},
		"tcp, connect only: the server accepted": {
			target: func(addr string) probing.TargetSpec { return closedTarget("tcp://" + addr) },
			want:   probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage},
		},
		"tcp, query and reply": {
			target: func(addr string) probing.TargetSpec { return pingTarget("tcp://" + addr) },
			want:   probing.Result{Reason: probing.ReasonUnexpectedReply, Message: `read "tcp://{addr}": reply does not match "^\\+PONG": the server closed the connection`},
		},
		"tls": {
			target:  func(addr string) probing.TargetSpec { return closedTarget("tls://" + addr) },
			want:    probing.Result{Reason: probing.ReasonConnectionFailed, Message: `handshake "tls://{addr}": ` + closed},
			wantTLS: probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage},
		},
		"tls, query and reply": {
			target:  func(addr string) probing.TargetSpec { return pingTarget("tls://" + addr) },
			want:    probing.Result{Reason: probing.ReasonConnectionFailed, Message: `handshake "tls://{addr}": ` + closed},
			wantTLS: probing.Result{Reason: probing.ReasonUnexpectedReply, Message: `read "tls://{addr}": reply does not match "^\\+PONG": the server closed the connection`},
		},
		"dns over tcp": {
			target: func(addr string) probing.TargetSpec {
				return dnsTarget(addr, probing.DNSOptions{Name: "a.test", Type: "A", Transport: "tcp"})
			},
			want: probing.Result{Reason: probing.ReasonConnectionFailed, Message: `dns query "a.test." A to "dns://{addr}": the server closed the connection without responding`},
		},
	}
}
