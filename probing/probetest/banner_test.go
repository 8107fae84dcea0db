package probetest_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/probetest"
)

// dialBanner connects to srv (over TLS, trusting ca, when ca is set) with
// a deadline, and closes the connection when the test ends.
func dialBanner(t *testing.T, srv *probetest.BannerServer, ca *probetest.Certificate) net.Conn {
	t.Helper()
	var (
		c   net.Conn
		err error
	)
	if ca != nil {
		pool := x509.NewCertPool()
		pool.AddCert(ca.X509)
		c, err = tls.Dial("tcp", srv.Addr(), &tls.Config{RootCAs: pool, ServerName: "banner.test"})
	} else {
		c, err = net.Dial("tcp", srv.Addr())
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return c
}

func TestBannerServer(t *testing.T) {
	t.Parallel()
	cert := probetest.NewCertificate(t, "banner.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	tests := map[string]struct {
		opts     probetest.BannerOptions
		send     string
		want     string // everything read until EOF
		tls      bool
		received string
	}{
		"banner, then close":          {opts: probetest.BannerOptions{Banner: "220 ready\r\n", Close: true}, want: "220 ready\r\n"},
		"close at once":               {opts: probetest.BannerOptions{Close: true}, want: ""},
		"query and reply":             {opts: probetest.BannerOptions{Query: "PING\r\n", Reply: "+PONG\r\n", Close: true}, send: "PING\r\n", want: "+PONG\r\n", received: "PING\r\n"},
		"banner, query and reply":     {opts: probetest.BannerOptions{Banner: "hi\n", Query: "Q", Reply: "A", Close: true}, send: "xQ", want: "hi\nA", received: "xQ"},
		"a query that never comes":    {opts: probetest.BannerOptions{Query: "PING\r\n", Reply: "+PONG\r\n", Close: true}, send: "PONG\r\n", want: "", received: "PONG\r\n"},
		"banner over TLS, then close": {opts: probetest.BannerOptions{Banner: "220 ready\r\n", Close: true, TLS: &cert.TLS}, want: "220 ready\r\n", tls: true},
		"query and reply over TLS":    {opts: probetest.BannerOptions{Query: "PING", Reply: "PONG", Close: true, TLS: &cert.TLS}, send: "PING", want: "PONG", tls: true, received: "PING"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := probetest.NewTestBannerServer(t, tc.opts)
			var ca *probetest.Certificate
			if tc.tls {
				ca = &cert
			}
			c := dialBanner(t, srv, ca)
			if tc.send != "" {
				_, err := io.WriteString(c, tc.send)
				require.NoError(t, err)
				if tc.opts.Reply != "" && tc.want == "" { // the server waits for more: say we are done
					require.NoError(t, c.(*net.TCPConn).CloseWrite())
				}
			}
			got, err := io.ReadAll(c)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			assert.Equal(t, tc.received, string(srv.Received()))
			assert.EqualValues(t, 1, srv.Accepted())
			require.Eventually(t, func() bool { return srv.Open() == 0 }, 10*time.Second, 10*time.Millisecond)
		})
	}
}

// Without Close the server keeps the connection open until the client
// closes it, and never sends anything unasked.
func TestBannerServerKeepsConnectionsOpen(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n"})
	c := dialBanner(t, srv, nil)
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(c, buf, len("220 ready\r\n"))
	require.NoError(t, err)
	assert.Equal(t, "220 ready\r\n", string(buf[:n]))

	// Nothing more comes: the read waits until its deadline.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, err = c.Read(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Equal(t, 1, srv.Open())

	_, err = io.WriteString(c, "QUIT\r\n")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return srv.Open() == 0 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "QUIT\r\n", string(srv.Received()))
}

// Close closes the connections still open, and may be called again.
func TestBannerServerClose(t *testing.T) {
	t.Parallel()
	srv, err := probetest.NewBannerServer(probetest.BannerOptions{})
	require.NoError(t, err)
	c, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool { return srv.Open() == 1 }, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close())
	assert.Zero(t, srv.Open())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the server closed the connection")
	_, err = net.Dial("tcp", srv.Addr())
	assert.Error(t, err, "the listener is closed")
}

func TestBannerServerListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, ip := range []string{"0.0.0.0", "192.0.2.1", "::", "not an address"} {
		_, err := probetest.NewBannerServer(probetest.BannerOptions{IP: ip})
		assert.Error(t, err, ip)
	}
	srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{IP: "127.0.0.2", Banner: "x", Close: true})
	host, _, err := net.SplitHostPort(srv.Addr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.2", host)
	got, err := io.ReadAll(dialBanner(t, srv, nil))
	require.NoError(t, err)
	assert.Equal(t, "x", string(got))
}

// A client that fails the handshake gets nothing, and the server goes on.
func TestBannerServerTLSHandshakeFailure(t *testing.T) {
	t.Parallel()
	cert := probetest.NewCertificate(t, "banner.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	other := probetest.NewCertificate(t, "other.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	srv := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "secret", Close: true, TLS: &cert.TLS})
	pool := x509.NewCertPool()
	pool.AddCert(other.X509)
	_, err := tls.Dial("tcp", srv.Addr(), &tls.Config{RootCAs: pool, ServerName: "banner.test"})
	var verifyErr *tls.CertificateVerificationError
	require.True(t, errors.As(err, &verifyErr), "%v", err)
	require.Eventually(t, func() bool { return srv.Open() == 0 }, 10*time.Second, 10*time.Millisecond)

	got, err := io.ReadAll(dialBanner(t, srv, &cert))
	require.NoError(t, err)
	assert.Equal(t, "secret", string(got))
}
