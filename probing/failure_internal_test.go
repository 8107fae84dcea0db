package probing

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestErrorText: every error errorText knows keeps its sense in fixed
// words, the names the user wrote and numbers; what it does not know, or
// what a server wrote, is not shown.
func TestErrorText(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t"
	scope := textScope{dnsServer: "127.0.0.1:53", addr: "example.com:443", names: []string{"example.com"}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443},
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	tests := map[string]struct {
		err   error
		scope textScope
		want  string
	}{
		"refused, the target's address named": {err: refused, want: "dial tcp example.com:443: connect: connection refused"},
		"refused after a redirect": {
			err: refused, scope: textScope{addr: "example.com:443", redirected: true},
			want: "dial tcp (a redirect's address): connect: connection refused",
		},
		"local address left out": {
			err: &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{Port: 54321}, Addr: &net.TCPAddr{Port: 443},
				Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}},
			want: "read tcp example.com:443: read: connection reset by peer",
		},
		"lookup of the target's name": {
			err:  &net.DNSError{Err: "no such host", Name: "example.com", Server: "10.0.0.1:53", IsNotFound: true},
			want: "lookup example.com on 127.0.0.1:53: no such host",
		},
		"lookup of a redirect's name": {
			err:  &net.DNSError{Err: "no such host", Name: secret + ".test", IsNotFound: true},
			want: "lookup of a redirect's host: no such host",
		},
		"unknown authority, candidate named": {
			err:  &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}},
			want: "tls: failed to verify certificate: x509: certificate signed by unknown authority",
		},
		"certificate names": {
			err:  x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{secret + ".test"}}, Host: "example.com"},
			want: `x509: certificate is not valid for "example.com"`,
		},
		"certificate names, a redirect's host": {
			err:  x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{secret}}, Host: secret + ".test"},
			want: `x509: certificate is not valid for "the name asked for"`,
		},
		"expired, no current time": {
			err:  x509.CertificateInvalidError{Reason: x509.Expired, Detail: "current time X is after Y"},
			want: "x509: certificate has expired or is not yet valid",
		},
		"an alert": {
			err: &net.OpError{Op: "remote error", Err: tls.AlertError(40)}, want: "remote error: tls: handshake failure",
		},
		"a TLS text quoting a certificate field": {
			err:  fmt.Errorf("tls: failed to parse certificate from server: %w", errors.New(`x509: cannot parse URI "`+secret+`"`)),
			want: "tls: handshake failed",
		},
		"a TLS text quoting nothing": {
			err: errors.New("tls: server selected unsupported protocol version 301"), want: "tls: server selected unsupported protocol version 301",
		},
		"malformed status line": {
			err:  fmt.Errorf("read response body: %w", errors.New(`malformed HTTP status code "`+secret+`"`)),
			want: "read response body: malformed HTTP status line",
		},
		"malformed header line": {err: errors.New(`malformed MIME header: missing colon: "` + secret + `"`), want: "malformed HTTP header line"},
		"header limit":          {err: errors.New("net/http: server response headers exceeded 65536 bytes; aborted"), want: "net/http: server response headers exceeded 65536 bytes; aborted"},
		"GOAWAY debug data": {
			err:  errors.New(`http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=PROTOCOL_ERROR, debug="` + secret + `"`),
			want: "http2: server sent GOAWAY and closed the connection; ErrCode=PROTOCOL_ERROR",
		},
		"HTTP/2 stream error": {
			err:  errors.New(`stream error: stream ID 3; PROTOCOL_ERROR; invalid header field value for "` + secret + `"`),
			want: "http2: stream error: PROTOCOL_ERROR",
		},
		"a broken connection's prefix": {
			err: fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", io.ErrUnexpectedEOF), want: "unexpected EOF",
		},
		"an unknown wrapper": {err: fmt.Errorf("%s: %w", secret, io.EOF), want: "EOF"},
		"an unknown error":   {err: errors.New(secret), want: msgWithheld},
		"a fixed error":      {err: malformed("record %d: %v", 3, errors.New("x")), want: "malformed response: record 3: x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := tc.scope
			if s.addr == "" && !s.redirected {
				s = scope
			}
			got := errorText(tc.err, s)
			assert.Equal(t, tc.want, got)
			assert.NotContains(t, got, secret)
		})
	}
}
