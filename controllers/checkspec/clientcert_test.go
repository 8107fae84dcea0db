package checkspec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestCheckForClientCertificate: spec.tls.clientCertSecretRef reads the
// certificate and key of a kubernetes.io/tls Secret; a missing key or a
// pair that does not parse is a SecretError naming the Secret and
// nothing of its content, and the Secret is watched (SecretNames).
func TestCheckForClientCertificate(t *testing.T) {
	now := time.Now()
	cert := probetest.CertificateTemplate{Name: "prober.test", NotBefore: now, NotAfter: now.Add(time.Hour), Leaf: true, Client: true}.Issue(t)
	other := probetest.CertificateTemplate{Name: "other.test", NotBefore: now, NotAfter: now.Add(time.Hour), Leaf: true, Client: true}.Issue(t)
	secrets := fakeSecrets(map[string]map[string]string{
		"client":     {"tls.crt": string(cert.PEM), "tls.key": string(cert.KeyPEM(t))},
		"mismatched": {"tls.crt": string(cert.PEM), "tls.key": string(other.KeyPEM(t))},
		"no-key":     {"tls.crt": string(cert.PEM)},
	})
	checker := func(secret string) *webcheckerv1alpha1.WebChecker {
		wc := newChecker("ns", "mtls", "https://api.example.com", "/")
		wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{ClientCertSecretRef: &webcheckerv1alpha1.SecretReference{Name: secret}}
		return wc
	}

	wc := checker("client")
	check, err := checkspec.CheckFor(wc, secrets)
	require.NoError(t, err)
	assert.Equal(t, cert.PEM, check.Target.Spec().TLS.ClientCertificate)
	assert.Equal(t, probing.Secret(cert.KeyPEM(t)), check.Target.Spec().TLS.ClientKey)
	assert.Equal(t, []string{"client"}, checkspec.SecretNames(&wc.Spec))

	for secret, want := range map[string]string{
		"mismatched": `spec.tls.clientCertSecretRef: Secret "mismatched" does not hold a PEM-encoded certificate (tls.crt) and its private key (tls.key)`,
		"no-key":     `tls.key`,
		"missing":    `"missing"`,
	} {
		t.Run(secret, func(t *testing.T) {
			_, err := checkspec.CheckFor(checker(secret), secrets)
			var secretErr *checkspec.SecretError
			require.ErrorAs(t, err, &secretErr)
			assert.Equal(t, probing.ReasonSecretUnavailable, secretErr.Reason)
			assert.Contains(t, secretErr.Message, want)
			assert.NotContains(t, secretErr.Message, "PRIVATE KEY")
		})
	}
}
