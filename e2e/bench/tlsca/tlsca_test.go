package tlsca

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeAndVerify serves the certificate on 127.0.0.1 and connects
// with only the CA trusted; a client trusting nothing fails.
func TestServeAndVerify(t *testing.T) {
	ca, err := New()
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(ca.CertPEM, ca.KeyPEM)
	require.NoError(t, err, "the PEM pair loads as another process would")
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.CAPEM))
	tests := map[string]struct {
		roots   *x509.CertPool
		wantErr bool
	}{
		"trusting the CA":  {roots: roots},
		"trusting nothing": {roots: x509.NewCertPool(), wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(), &tls.Config{RootCAs: tt.roots})
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			_ = conn.Close()
		})
	}
}
