package checkspec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestTargetCacheBuildsOncePerChange: a checker reconciled again with the
// same spec and Secret values gets the very Target built before; a
// changed Secret value, or a changed spec, builds a new one, and so does
// a checker whose Target was forgotten.
func TestTargetCacheBuildsOncePerChange(t *testing.T) {
	b := checkspec.CheckBuilder{Targets: checkspec.NewTargetCache()}
	wc := newChecker("ns", "cached", "https://example.com", "/api")
	wc.Spec.ExpectedStatusCodes = []int32{204, 200}
	wc.Spec.BearerTokenSecretRef = &webcheckerv1alpha1.SecretKeySelector{Name: "api", Key: "token"}
	wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}}
	ca := string(probetest.NewCertificate(t, "ca.test", time.Now(), time.Now().Add(time.Hour)).PEM)
	values := map[string]map[string]string{"api": {"token": "one"}, "ca": {"ca.crt": ca}}
	build := func() (checkBuilt, error) {
		c, err := b.CheckFor(wc, fakeSecrets(values))
		return checkBuilt{c.Target.URL(), c.Target}, err
	}

	first, err := build()
	require.NoError(t, err)
	again, err := build()
	require.NoError(t, err)
	assert.True(t, first.target == again.target, "the same spec built a new Target")

	values["api"]["token"] = "two"
	rotated, err := build()
	require.NoError(t, err)
	assert.False(t, rotated.target == again.target, "a rotated Secret kept the old Target")

	wc.Spec.Path = "/v2"
	moved, err := build()
	require.NoError(t, err)
	assert.False(t, moved.target == rotated.target, "a new path kept the old Target")
	assert.Equal(t, "https://example.com/v2", moved.url)

	// Forgotten (its replica no longer probes it): built anew.
	b.Targets.Forget(types.NamespacedName{Namespace: "ns", Name: "cached"})
	rebuilt, err := build()
	require.NoError(t, err)
	assert.False(t, rebuilt.target == moved.target, "a forgotten Target was kept")
	assert.True(t, rebuilt.target.(probing.Target).Equal(moved.target.(probing.Target)))
}

// checkBuilt is what TestTargetCacheBuildsOncePerChange compares of a
// Check.
type checkBuilt struct {
	url    string
	target any
}
