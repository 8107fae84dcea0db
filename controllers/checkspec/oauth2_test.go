package checkspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
)

// TestCheckForOAuth2: spec.oauth2 becomes the target's grant, its client
// read from the Secret's client-id and client-secret (a trailing line
// break dropped); a missing key is a SecretError, and the Secret is
// watched.
func TestCheckForOAuth2(t *testing.T) {
	secrets := fakeSecrets(map[string]map[string]string{
		"oauth":     {"client-id": "probe", "client-secret": "s3cr3t\n"},
		"no-secret": {"client-id": "probe"},
	})
	checker := func(secret string) *webcheckerv1alpha1.WebChecker {
		wc := newChecker("ns", "oauth2", "https://api.example.com", "/health")
		wc.Spec.OAuth2 = &webcheckerv1alpha1.OAuth2{TokenURL: "https://auth.example.com/token",
			CredentialsSecretRef: webcheckerv1alpha1.SecretReference{Name: secret}, Scopes: []webcheckerv1alpha1.OAuth2Scope{"a", "b:read"}}
		return wc
	}
	wc := checker("oauth")
	check, err := checkspec.CheckFor(wc, secrets)
	require.NoError(t, err)
	assert.Equal(t, &probing.OAuth2{TokenURL: "https://auth.example.com/token", ClientID: "probe", ClientSecret: "s3cr3t", Scopes: []string{"a", "b:read"}}, check.Target.Spec().OAuth2)
	assert.Equal(t, []string{"oauth"}, checkspec.SecretNames(&wc.Spec))

	_, err = checkspec.CheckFor(checker("no-secret"), secrets)
	var secretErr *checkspec.SecretError
	require.ErrorAs(t, err, &secretErr)
	assert.Equal(t, `spec.oauth2.credentialsSecretRef: Secret "no-secret" has no key "client-secret"`, secretErr.Message)
}
