package probetest_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/probetest"
)

// TestDualServer serves plain HTTP and HTTPS on one port, and a client
// that connects without sending a byte does not stop it.
func TestDualServer(t *testing.T) {
	cert := probetest.NewCertificate(t, "dual.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	srv := probetest.NewTestDualServer(t, cert.TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			_, _ = io.WriteString(w, "https")
			return
		}
		_, _ = io.WriteString(w, "http")
	}))
	silent, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	defer silent.Close()

	roots := x509.NewCertPool()
	roots.AddCert(cert.X509)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for scheme, want := range map[string]string{"http": "http", "https": "https"} {
		resp, err := client.Get(scheme + "://" + srv.Addr() + "/")
		require.NoError(t, err, scheme)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, want, string(body), scheme)
	}
}
