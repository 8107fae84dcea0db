package probing_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
	"github.com/networkio/webchecker/probing/probetest"
)

// Nothing echoed: whatever a target (or a proxy) sends, no byte of it
// reaches a Result field that ends up in the checker's status or Events.
// Every server below puts echoMarker everywhere it can: bodies, header
// names and values, reason phrases, malformed status and header lines,
// redirect locations, TCP replies, certificate names, HTTP/2 GOAWAY debug
// data, gRPC status messages and details, DNS records of every type, a
// proxy's CONNECT answers.

// echoMarker is what hostile servers send; it must appear in no message.
const echoMarker = "zqx7secret"

// assertNoEcho fails t when a field of res that reaches the status or
// Events holds echoMarker, in any case, or its hex encoding.
func assertNoEcho(t *testing.T, res probing.Result) {
	t.Helper()
	t.Logf("%s: %s (warning %q)", res.Reason, res.Message, res.CertificateWarning)
	for field, text := range map[string]string{
		"Message": res.Message, "Reason": string(res.Reason), "CertificateWarning": res.CertificateWarning,
	} {
		lower := strings.ToLower(text)
		assert.NotContains(t, lower, echoMarker, "%s echoes the target: %q", field, text)
		assert.NotContains(t, lower, hex.EncodeToString([]byte(echoMarker)), "%s echoes the target in hex: %q", field, text)
	}
}

// echoTimeout is the timeout of the hostile probes: none waits for it but
// the ones that must time out.
const echoTimeout = 5 * time.Second

// hostileHTTP1 returns the URL of a raw server answering every request
// with response.
func hostileHTTP1(t *testing.T, response string) string { return rawServer(t, response) }

// redirectTo answers with a 302 to location.
func redirectTo(location string) string {
	return "HTTP/1.1 302 Found\r\nLocation: " + location + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
}

// h2Server serves raw HTTP/2 on a loopback listener, over TLS (ALPN h2)
// when cert is set, else in prior knowledge (h2c, as gRPC speaks it):
// it reads the client preface, sends its SETTINGS and hands the framer to
// handle. It returns the listener's address.
func h2Server(t *testing.T, cert *tls.Certificate, handle func(fr *http2.Framer)) string {
	t.Helper()
	var ln net.Listener
	var err error
	if cert != nil {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"h2"}})
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		if err := fr.WriteSettings(); err != nil {
			return
		}
		handle(fr)
		_, _ = io.Copy(io.Discard, c) // until the client hangs up
	})
	return ln.Addr().String()
}

// awaitHeaders reads frames until the first HEADERS frame, acknowledging
// SETTINGS; it returns its stream ID (0 when the client went away).
func awaitHeaders(fr *http2.Framer) uint32 {
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			return f.StreamID
		}
	}
}

// goAwayWithMarker answers the first request with a GOAWAY whose debug
// data is the marker.
func goAwayWithMarker(fr *http2.Framer) {
	if id := awaitHeaders(fr); id != 0 {
		_ = fr.WriteGoAway(0, http2.ErrCodeProtocol, []byte("debug "+echoMarker))
	}
}

// headersWithMarker answers the first request with headers (and a body)
// full of the marker: a status that is not gRPC's and a content type that
// is not gRPC's either.
func headersWithMarker(status string) func(fr *http2.Framer) {
	return func(fr *http2.Framer) {
		id := awaitHeaders(fr)
		if id == 0 {
			return
		}
		var block bytes.Buffer
		enc := hpack.NewEncoder(&block)
		for _, f := range []hpack.HeaderField{
			{Name: ":status", Value: status},
			{Name: "content-type", Value: "text/" + echoMarker},
			{Name: "x-" + echoMarker, Value: echoMarker},
			{Name: "grpc-status", Value: "13"},
			{Name: "grpc-message", Value: echoMarker},
		} {
			_ = enc.WriteField(f)
		}
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true})
		_ = fr.WriteData(id, true, []byte(echoMarker))
	}
}

// alertingServer is a TLS server that requires a client certificate: its
// alert ends every handshake of the prober, which has none.
func alertingServer(t *testing.T, cert *tls.Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{*cert}, ClientAuth: tls.RequireAnyClientCert, NextProtos: []string{"http/1.1"},
	})
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) {
		if err := c.(*tls.Conn).Handshake(); err == nil {
			_, _ = io.WriteString(c, "220 "+echoMarker+"\r\n")
		}
	})
	return ln.Addr().String()
}

// hostileProxy answers every CONNECT (and every other request) with
// response, as is.
func hostileProxy(t *testing.T, response string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveRaw(t, ln, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, response)
		_, _ = io.Copy(io.Discard, c)
	})
	return "http://" + ln.Addr().String()
}

// markerCerts are certificates whose names are the marker's.
type markerCerts struct {
	// expiring is trusted (see its PEM) and expires within the day.
	expiring probetest.Certificate
	// other is a root named as expiring, with another key: trusting it
	// makes expiring's issuer a candidate that fails.
	other probetest.Certificate
}

func newMarkerCerts(t *testing.T) markerCerts {
	name := echoMarker + ".test"
	return markerCerts{
		expiring: probetest.NewCertificate(t, name, time.Now().Add(-time.Hour), time.Now().Add(12*time.Hour)),
		other:    probetest.NewCertificate(t, name, time.Now().Add(-time.Hour), time.Now().Add(48*time.Hour)),
	}
}

// tlsVariants returns the TLS failures (and the expiring success) of a
// server presenting certs.expiring: unknown authority, a candidate
// authority of the same name that fails, a name the certificate is not
// valid for, and a warning for its expiry.
func tlsVariants(certs markerCerts) map[string]probing.TLSOptions {
	return map[string]probing.TLSOptions{
		"unknown authority":           {},
		"candidate authority failing": {RootCAs: certs.other.PEM},
		"name mismatch":               {RootCAs: certs.expiring.PEM, ServerName: "healthy.test"},
		"expiring soon, warned":       {RootCAs: certs.expiring.PEM},
	}
}

func TestNothingEchoedHTTP(t *testing.T) {
	t.Parallel()
	refused := closedPort(t)
	marker := echoMarker
	body := strings.Repeat(marker, 10)
	cases := map[string]string{
		"body of an unexpected status": "HTTP/1.1 500 Internal Server Error\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body,
		"reason phrase":                  "HTTP/1.1 500 " + marker + "\r\nContent-Length: 0\r\n\r\n",
		"header names and values":        "HTTP/1.1 503 Unavailable\r\nX-" + marker + ": " + marker + "\r\nContent-Length: 0\r\n\r\n",
		"malformed status line":          marker + "\r\n\r\n",
		"malformed HTTP version":         marker + "/1.1 200 OK\r\n\r\n",
		"malformed status code":          "HTTP/1.1 2" + marker + " OK\r\n\r\n",
		"long malformed status code":     "HTTP/1.1 " + strings.Repeat("9", 60<<10) + marker + " OK\r\n\r\n",
		"malformed header line":          "HTTP/1.1 200 OK\r\n" + marker + "\r\n\r\n",
		"invalid header name":            "HTTP/1.1 200 OK\r\nX " + marker + ": v\r\n\r\n",
		"bad Content-Length":             "HTTP/1.1 200 OK\r\nContent-Length: " + marker + "\r\n\r\n",
		"unsupported transfer encoding":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: " + marker + "\r\n\r\n",
		"broken chunked body":            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + marker + "\r\n",
		"body cut short":                 "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + marker,
		"redirect to a refused port":     redirectTo("http://" + refused + "/" + marker),
		"redirect to a name not found":   redirectTo("http://" + marker + ".test/"),
		"redirect to an unparsable URL":  redirectTo("http://[" + marker + "/"),
		"redirect to an unknown scheme":  redirectTo(marker + "://example.test/"),
		"redirect with a marker query":   redirectTo("http://" + refused + "/?q=" + marker + "#" + marker),
		"redirect with marker userinfo":  redirectTo("http://" + marker + ":" + marker + "@" + refused + "/"),
		"redirect to a malformed answer": "",
	}
	// A redirect to a server that answers malformed, then a loop.
	cases["redirect to a malformed answer"] = redirectTo(hostileHTTP1(t, marker+"\r\n\r\n") + marker)
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	for name, response := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := hostileHTTP1(t, response)
			for _, target := range []probing.TargetSpec{
				{URL: url, Method: http.MethodGet, Timeout: echoTimeout, FollowRedirects: true},
				{URL: url, Method: http.MethodGet, Timeout: echoTimeout, FollowRedirects: true,
					BodyMatch: &probing.BodyMatch{Regexp: pattern.MustCompile("^ok$"), MaxBytes: 1 << 10}},
			} {
				assertNoEcho(t, probe(t.Context(), prober, target))
			}
		})
	}

	t.Run("redirect loop", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		self := "http://" + ln.Addr().String() + "/"
		serveRaw(t, ln, func(c net.Conn) {
			if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				_, _ = io.WriteString(c, redirectTo(self+marker))
			}
		})
		res := probe(t.Context(), prober, probing.TargetSpec{URL: self, Method: http.MethodGet, Timeout: echoTimeout, FollowRedirects: true})
		assert.Equal(t, probing.ReasonTooManyRedirects, res.Reason)
		assertNoEcho(t, res)
	})
}

func TestNothingEchoedHTTPS(t *testing.T) {
	t.Parallel()
	certs := newMarkerCerts(t)
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	https := startTLSServer(t, &certs.expiring, 0)
	for name, o := range tlsVariants(certs) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := probe(t.Context(), prober, probing.TargetSpec{
				URL: https.URL, Method: http.MethodGet, Timeout: echoTimeout, TLS: o, CertExpiryWarning: 30 * 24 * time.Hour,
			})
			assertNoEcho(t, res)
		})
	}

	h2 := map[string]func(fr *http2.Framer){
		"HTTP/2 GOAWAY debug data": goAwayWithMarker,
		"HTTP/2 headers":           headersWithMarker("500"),
		"HTTP/2 malformed status":  headersWithMarker(echoMarker),
	}
	for name, handle := range h2 {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr := h2Server(t, &certs.expiring.TLS, handle)
			res := probe(t.Context(), prober, probing.TargetSpec{
				URL: "https://" + addr + "/", Method: http.MethodGet, Timeout: echoTimeout,
				TLS: probing.TLSOptions{RootCAs: certs.expiring.PEM},
			})
			assert.False(t, res.Success)
			assertNoEcho(t, res)
		})
	}

	t.Run("plain HTTP answer to a TLS client", func(t *testing.T) {
		t.Parallel()
		srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "HTTP/1.1 400 " + echoMarker + "\r\n\r\n" + echoMarker})
		res := probe(t.Context(), prober, probing.TargetSpec{URL: "https://" + srv.Addr() + "/", Method: http.MethodGet, Timeout: echoTimeout})
		assert.Equal(t, probing.ReasonTLSError, res.Reason)
		assertNoEcho(t, res)
	})
}

func TestNothingEchoedThroughProxies(t *testing.T) {
	t.Parallel()
	answers := map[string]string{
		"refused with a marker reason":   "HTTP/1.1 403 " + echoMarker + "\r\nX-" + echoMarker + ": " + echoMarker + "\r\nContent-Length: 0\r\n\r\n",
		"407 with a marker reason":       "HTTP/1.1 407 " + echoMarker + "\r\nProxy-Authenticate: Basic realm=\"" + echoMarker + "\"\r\nContent-Length: 0\r\n\r\n",
		"malformed status line":          echoMarker + "\r\n\r\n",
		"malformed status code":          "HTTP/1.1 2" + echoMarker + " OK\r\n\r\n",
		"malformed header line":          "HTTP/1.1 200 OK\r\n" + echoMarker + "\r\n\r\n",
		"tunnel then garbage":            "HTTP/1.1 200 Connection established\r\n\r\n" + echoMarker + "\r\n\r\n",
		"tunnel then a malformed answer": "HTTP/1.1 200 OK\r\n\r\n" + echoMarker + " 200 OK\r\n\r\n",
	}
	certs := newMarkerCerts(t)
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	targets := map[string]probing.TargetSpec{
		"http":  {URL: "http://127.0.0.1:1/", Method: http.MethodGet},
		"https": {URL: "https://127.0.0.1:1/", Method: http.MethodGet, TLS: probing.TLSOptions{RootCAs: certs.expiring.PEM}},
		"tcp":   {URL: "tcp://127.0.0.1:1", TCP: expectReply("", "^220 ", 1024)},
		"tls":   {URL: "tls://127.0.0.1:1", TCP: expectReply("", "^220 ", 1024)},
		"grpc":  {URL: "grpc://127.0.0.1:1"},
		"grpcs": {URL: "grpcs://127.0.0.1:1"},
	}
	for name, answer := range answers {
		proxy := hostileProxy(t, answer)
		for kind, target := range targets {
			t.Run(name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				target.Timeout, target.Proxy = echoTimeout, &probing.Proxy{URL: proxy}
				res := probe(t.Context(), prober, target)
				assert.False(t, res.Success)
				assertNoEcho(t, res)
			})
		}
	}
}

func TestNothingEchoedTCPAndTLS(t *testing.T) {
	t.Parallel()
	certs := newMarkerCerts(t)
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	reply := echoMarker + "\r\n" + strings.Repeat(echoMarker, 100)
	plain := map[string]probetest.BannerOptions{
		"banner, kept open": {Banner: reply},
		"banner, closed":    {Banner: reply, Close: true},
		"reply, closed":     {Query: "HELLO", Reply: reply, Close: true},
	}
	for name, o := range plain {
		t.Run("tcp/"+name, func(t *testing.T) {
			t.Parallel()
			srv := probetest.NewTestBannerServer(t, o)
			for _, maxBytes := range []int64{16, 1 << 10} {
				res := probe(t.Context(), prober, probing.TargetSpec{
					URL: "tcp://" + srv.Addr(), Timeout: 2 * time.Second, TCP: expectReply("HELLO", "^220 ", maxBytes),
				})
				assert.False(t, res.Success)
				assertNoEcho(t, res)
			}
		})
	}
	tlsSrv := probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &certs.expiring.TLS, Banner: reply})
	for name, o := range tlsVariants(certs) {
		t.Run("tls/"+name, func(t *testing.T) {
			t.Parallel()
			res := probe(t.Context(), prober, probing.TargetSpec{
				URL: "tls://" + tlsSrv.Addr(), Timeout: 2 * time.Second, TLS: o, CertExpiryWarning: 30 * 24 * time.Hour,
				TCP: expectReply("", "^220 ", 1<<10),
			})
			assertNoEcho(t, res)
			res = probe(t.Context(), prober, probing.TargetSpec{
				URL: "tls://" + tlsSrv.Addr(), Timeout: 2 * time.Second, TLS: o, CertExpiryWarning: 30 * 24 * time.Hour,
			})
			assertNoEcho(t, res)
		})
	}
	t.Run("tls/alert: a client certificate required", func(t *testing.T) {
		t.Parallel()
		addr := alertingServer(t, &certs.expiring.TLS)
		roots := probing.TLSOptions{RootCAs: certs.expiring.PEM}
		for _, target := range []probing.TargetSpec{
			{URL: "tls://" + addr, Timeout: 2 * time.Second, TLS: roots, TCP: expectReply("", "^220 ", 1<<10)},
			{URL: "https://" + addr + "/", Method: http.MethodGet, Timeout: 2 * time.Second, TLS: roots},
		} {
			res := probe(t.Context(), prober, target)
			assert.Equal(t, probing.ReasonTLSError, res.Reason, "%+v", res)
			assertNoEcho(t, res)
		}
	})
	t.Run("tls/plain server answering", func(t *testing.T) {
		t.Parallel()
		srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: reply})
		res := probe(t.Context(), prober, probing.TargetSpec{URL: "tls://" + srv.Addr(), Timeout: 2 * time.Second})
		assert.Equal(t, probing.ReasonTLSError, res.Reason)
		assertNoEcho(t, res)
	})
}

func TestNothingEchoedGRPC(t *testing.T) {
	t.Parallel()
	certs := newMarkerCerts(t)
	prober := newKindProber(t, newDNS(t), probing.ProberOptions{})
	st, err := status.New(codes.Internal, echoMarker+" "+strings.Repeat(echoMarker, 50)).
		WithDetails(wrapperspb.String(echoMarker))
	require.NoError(t, err)
	failing := &fakeHealth{check: func() (*healthpb.HealthCheckResponse, error) { return nil, st.Err() }}
	unknownStatus := &fakeHealth{check: func() (*healthpb.HealthCheckResponse, error) {
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_ServingStatus(77)}, nil
	}}

	targets := map[string]probing.TargetSpec{
		"grpc status message and details": grpcTarget("grpc://"+startGRPC(t, grpcServerOptions{health: failing}).addr, ""),
		"grpcs status message and details": func() probing.TargetSpec {
			tg := grpcTarget("grpcs://"+startGRPC(t, grpcServerOptions{health: failing, cert: &certs.expiring}).addr, "")
			tg.TLS.RootCAs = certs.expiring.PEM
			return tg
		}(),
		"grpc unknown serving status":          grpcTarget("grpc://"+startGRPC(t, grpcServerOptions{health: unknownStatus}).addr, ""),
		"grpc GOAWAY debug data":               grpcTarget("grpc://"+h2Server(t, nil, goAwayWithMarker), ""),
		"grpc non-gRPC headers":                grpcTarget("grpc://"+h2Server(t, nil, headersWithMarker("500")), ""),
		"grpc malformed status":                grpcTarget("grpc://"+h2Server(t, nil, headersWithMarker(echoMarker)), ""),
		"grpc HTTP/1 answer":                   grpcTarget("grpc://"+strings.TrimSuffix(strings.TrimPrefix(hostileHTTP1(t, "HTTP/1.1 400 "+echoMarker+"\r\n\r\n"), "http://"), "/"), ""),
		"grpc garbage":                         grpcTarget("grpc://"+probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: strings.Repeat(echoMarker, 100)}).Addr(), ""),
		"grpcs GOAWAY debug data":              grpcTarget("grpcs://"+h2Server(t, &certs.expiring.TLS, goAwayWithMarker), ""),
		"grpcs non-gRPC headers":               grpcTarget("grpcs://"+h2Server(t, &certs.expiring.TLS, headersWithMarker("500")), ""),
		"grpcs plain server answering":         grpcTarget("grpcs://"+probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: strings.Repeat(echoMarker, 100)}).Addr(), ""),
		"grpc service of the user, not echoed": grpcTarget("grpc://"+startGRPC(t, grpcServerOptions{health: failing}).addr, "svc"),
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if strings.HasPrefix(target.URL, "grpcs") && len(target.TLS.RootCAs) == 0 {
				target.TLS.RootCAs = certs.expiring.PEM
			}
			target.Timeout = echoTimeout
			res := probe(t.Context(), prober, target)
			assert.False(t, res.Success)
			assertNoEcho(t, res)
		})
	}
	grpcs := startGRPC(t, grpcServerOptions{cert: &certs.expiring})
	for name, o := range tlsVariants(certs) {
		t.Run("grpcs "+name, func(t *testing.T) {
			t.Parallel()
			target := grpcTarget("grpcs://"+grpcs.addr, "")
			target.Timeout, target.TLS, target.CertExpiryWarning = echoTimeout, o, 30*24*time.Hour
			assertNoEcho(t, probe(t.Context(), prober, target))
		})
	}
}

func TestNothingEchoedDNS(t *testing.T) {
	t.Parallel()
	// The records of the stub are the user's name's; their data (and the
	// owners of the raw servers' records) are the marker's.
	owner, name := dnsmessage.MustNewName("victim.test."), dnsmessage.MustNewName(echoMarker+".test.")
	hdr := func(typ dnsmessage.Type) dnsmessage.ResourceHeader {
		return dnsmessage.ResourceHeader{Name: owner, Type: typ, Class: dnsmessage.ClassINET, TTL: 60}
	}
	records := []dnsmessage.Resource{
		{Header: hdr(dnsmessage.TypeA), Body: &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}}},
		{Header: hdr(dnsmessage.TypeAAAA), Body: &dnsmessage.AAAAResource{AAAA: [16]byte{15: 1}}},
		{Header: hdr(dnsmessage.TypeCNAME), Body: &dnsmessage.CNAMEResource{CNAME: name}},
		{Header: hdr(dnsmessage.TypeNS), Body: &dnsmessage.NSResource{NS: name}},
		{Header: hdr(dnsmessage.TypePTR), Body: &dnsmessage.PTRResource{PTR: name}},
		{Header: hdr(dnsmessage.TypeMX), Body: &dnsmessage.MXResource{Pref: 10, MX: name}},
		{Header: hdr(dnsmessage.TypeSRV), Body: &dnsmessage.SRVResource{Priority: 1, Weight: 2, Port: 3, Target: name}},
		{Header: hdr(dnsmessage.TypeSOA), Body: &dnsmessage.SOAResource{NS: name, MBox: name, Serial: 1}},
		{Header: hdr(dnsmessage.TypeTXT), Body: &dnsmessage.TXTResource{TXT: []string{echoMarker, "\x00" + echoMarker}}},
		{Header: hdr(257), Body: &dnsmessage.UnknownResource{Type: 257, Data: append([]byte{0, 5}, "issue"+echoMarker...)}},
		{Header: hdr(99), Body: &dnsmessage.UnknownResource{Type: 99, Data: []byte(echoMarker)}},
	}
	stub := probetest.NewTestDNSServer(t, nil)
	require.NoError(t, stub.SetResources(records))
	prober := newDNSProber(t, newDNS(t), probing.ProberOptions{})
	for _, typ := range []string{"A", "AAAA", "CNAME", "NS", "PTR", "MX", "SRV", "SOA", "TXT", "CAA"} {
		for _, transport := range []string{"udp", "tcp"} {
			t.Run("stub "+typ+" over "+transport, func(t *testing.T) {
				t.Parallel()
				target := dnsTarget(stub.Addr(), probing.DNSOptions{
					Name: "victim.test", Type: typ, Transport: transport, AnswerMatch: matches("^nothing$"),
				})
				target.Timeout = echoTimeout
				res := probe(t.Context(), prober, target)
				assert.Equal(t, probing.ReasonAnswerMismatch, res.Reason, "%+v", res)
				assertNoEcho(t, res)
				target.DNS.AnswerMatch, target.DNS.Rcodes = nil, []string{"NXDOMAIN"}
				res = probe(t.Context(), prober, target)
				assert.Equal(t, probing.ReasonUnexpectedRcode, res.Reason, "%+v", res)
				assertNoEcho(t, res)
			})
		}
	}

	raw := map[string]func(t *testing.T, q []byte) []byte{
		"another question": func(t *testing.T, q []byte) []byte {
			return respond(t, q, func(m *dnsmessage.Message) { m.Questions[0].Name = name })
		},
		"records of the marker, then garbage": func(t *testing.T, q []byte) []byte {
			return append(respond(t, q, func(m *dnsmessage.Message) {
				for _, r := range records {
					r.Header.Name = name
					m.Answers = append(m.Answers, r)
				}
			}), echoMarker...)
		},
		"malformed record": func(t *testing.T, q []byte) []byte {
			msg := respond(t, q, func(m *dnsmessage.Message) {
				m.Answers = []dnsmessage.Resource{{Header: hdr(dnsmessage.TypeTXT), Body: &dnsmessage.TXTResource{TXT: []string{echoMarker}}}}
			})
			return msg[:len(msg)-3]
		},
		"garbage": func(*testing.T, []byte) []byte { return []byte(strings.Repeat(echoMarker, 10)) },
	}
	for rawName, reply := range raw {
		for _, transport := range []string{"udp", "tcp"} {
			t.Run(rawName+" over "+transport, func(t *testing.T) {
				t.Parallel()
				var srv *rawDNS
				if transport == "udp" {
					srv = startRawUDP(t, func(q []byte) [][]byte { return [][]byte{reply(t, q)} })
				} else {
					srv = startRawTCP(t, func(q []byte) [][]byte { return [][]byte{withPrefix(reply(t, q))} })
				}
				target := dnsTarget(srv.addr, probing.DNSOptions{
					Name: "healthy.test", Type: "A", Transport: transport, AnswerMatch: matches("^nothing$"),
				})
				target.Timeout = 2 * time.Second
				res := probe(t.Context(), prober, target)
				assert.False(t, res.Success)
				assertNoEcho(t, res)
			})
		}
	}
}
