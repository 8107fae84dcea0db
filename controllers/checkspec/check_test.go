package checkspec_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/probing/scheduler"
)

// fakeSecrets answers from a table: name -> key -> value.
func fakeSecrets(data map[string]map[string]string) checkspec.SecretValues {
	return func(name, key string) ([]byte, error) {
		secret, ok := data[name]
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
		}
		v, ok := secret[key]
		if !ok {
			return nil, checkspec.ErrMissingKey
		}
		return []byte(v), nil
	}
}

func TestCheckForProbeOptions(t *testing.T) {
	wc := newChecker("ns", "all", "https://example.com", "/api")
	wc.Spec.Method, wc.Spec.Body = "PUT", "{}"
	wc.Spec.Headers = []webcheckerv1alpha1.HTTPHeader{
		{Name: "Accept", Value: "application/json"},
		{Name: "X-Api-Key", ValueFrom: &webcheckerv1alpha1.HeaderValueSource{SecretKeyRef: webcheckerv1alpha1.SecretKeySelector{Name: "api", Key: "key"}}},
	}
	wc.Spec.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "ok", Invert: true, MaxBodyBytes: ptr.To[int64](10)}
	wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{ServerName: "api.example.com", MinVersion: "1.3",
		CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}, CertExpiryWarning: &metav1.Duration{Duration: time.Hour}}
	wc.Spec.BearerTokenSecretRef = &webcheckerv1alpha1.SecretKeySelector{Name: "api", Key: "token"}
	wc.Spec.IPFamily = webcheckerv1alpha1.IPFamilyIPv4
	ca := string(probetest.NewCertificate(t, "ca.test", time.Now(), time.Now().Add(time.Hour)).PEM)
	secrets := fakeSecrets(map[string]map[string]string{"api": {"key": "k3y\n", "token": "t0k"}, "ca": {"ca.crt": ca}})

	check, err := checkspec.CheckFor(wc, secrets)
	require.NoError(t, err)
	target := check.Target.Spec()
	assert.Equal(t, "https://example.com/api", target.URL)
	assert.Equal(t, "PUT", target.Method)
	assert.Equal(t, "{}", target.Body)
	assert.Equal(t, []probing.Header{{Name: "Accept", Value: "application/json"}, {Name: "X-Api-Key", Value: "k3y", Sensitive: true}}, target.Headers)
	assert.Equal(t, "ok", target.BodyMatch.Regexp.String())
	assert.True(t, target.BodyMatch.Invert)
	assert.EqualValues(t, 10, target.BodyMatch.MaxBytes)
	assert.Equal(t, probing.TLSOptions{ServerName: "api.example.com", MinVersion: tls.VersionTLS13, RootCAs: []byte(ca)}, target.TLS)
	assert.Equal(t, time.Hour, target.CertExpiryWarning)
	assert.Equal(t, probing.Secret("t0k"), target.BearerToken)
	assert.Nil(t, target.BasicAuth)
	assert.Equal(t, probing.IPFamilyIPv4, target.IPFamily)
	assert.Equal(t, []string{"api", "ca"}, checkspec.SecretNames(&wc.Spec))

	plain, err := checkspec.CheckFor(newChecker("ns", "plain", "example.com", "/"), nil)
	require.NoError(t, err)
	assert.Equal(t, webcheckerv1alpha1.DefaultCertExpiryWarning, plain.Target.CertExpiryWarning(), "the default applies without a tls block")
	assert.Equal(t, probing.IPFamilyAny, plain.Target.Spec().IPFamily)
}

// TestThresholdsFor resolves the thresholds and rejects what the API
// server rejects.
func TestThresholdsFor(t *testing.T) {
	window := func(failures, probes int32) *webcheckerv1alpha1.FailureWindow {
		return &webcheckerv1alpha1.FailureWindow{Failures: failures, Probes: probes}
	}
	tests := map[string]struct {
		failure, success *int32
		window           *webcheckerv1alpha1.FailureWindow
		want             scheduler.Thresholds
		wantErr          string
	}{
		"defaults":      {nil, nil, nil, scheduler.Thresholds{Failure: 1, Success: 1}, ""},
		"set":           {ptr.To[int32](3), ptr.To[int32](20), nil, scheduler.Thresholds{Failure: 3, Success: 20}, ""},
		"zero failures": {ptr.To[int32](0), nil, nil, scheduler.Thresholds{}, "invalid target: failureThreshold 0 must be between 1 and 20"},
		"too many":      {nil, ptr.To[int32](21), nil, scheduler.Thresholds{}, "invalid target: successThreshold 21 must be between 1 and 20"},
		"window":        {nil, nil, window(2, 6), scheduler.Thresholds{Failure: 1, Success: 1, Window: scheduler.Window{Failures: 2, Probes: 6}}, ""},
		"widest window": {ptr.To[int32](1), ptr.To[int32](1), window(64, 64), scheduler.Thresholds{Failure: 1, Success: 1, Window: scheduler.Window{Failures: 64, Probes: 64}}, ""},
		"window of 65":  {nil, nil, window(1, 65), scheduler.Thresholds{}, "invalid target: failureWindow.probes 65 must be between 1 and 64"},
		"empty window":  {nil, nil, window(0, 0), scheduler.Thresholds{}, "invalid target: failureWindow.probes 0 must be between 1 and 64"},
		"no failures":   {nil, nil, window(0, 3), scheduler.Thresholds{}, "invalid target: failureWindow.failures 0 must be between 1 and failureWindow.probes (3)"},
		"F above N":     {nil, nil, window(4, 3), scheduler.Thresholds{}, "invalid target: failureWindow.failures 4 must be between 1 and failureWindow.probes (3)"},
		"window and failureThreshold": {ptr.To[int32](2), nil, window(2, 6), scheduler.Thresholds{},
			"invalid target: failureWindow decides both ways: failureThreshold (2) and successThreshold (1) must be 1 with it"},
		"window and successThreshold": {nil, ptr.To[int32](3), window(2, 6), scheduler.Thresholds{},
			"invalid target: failureWindow decides both ways: failureThreshold (1) and successThreshold (3) must be 1 with it"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			wc := newChecker("ns", "thresholds", "example.com", "/")
			wc.Spec.FailureThreshold, wc.Spec.SuccessThreshold = tc.failure, tc.success
			wc.Spec.FailureWindow = tc.window
			got, err := checkspec.ThresholdsFor(wc)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCheckForSecretErrors(t *testing.T) {
	withRefs := func(mutate func(*webcheckerv1alpha1.WebCheckerSpec)) *webcheckerv1alpha1.WebChecker {
		wc := newChecker("ns", "refs", "https://example.com", "/")
		mutate(&wc.Spec)
		return wc
	}
	basic := withRefs(func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BasicAuthSecretRef = &webcheckerv1alpha1.SecretReference{Name: "basic"}
	})
	tests := map[string]struct {
		wc          *webcheckerv1alpha1.WebChecker
		secrets     checkspec.SecretValues
		wantReason  probing.Reason
		wantMessage string
	}{
		"Secret access off": {basic, nil, probing.ReasonSecretAccessDisabled,
			`the checker refers to Secret "basic", but the operator runs with Secret access turned off`},
		"missing Secret": {basic, fakeSecrets(nil), probing.ReasonSecretUnavailable, `spec.basicAuthSecretRef: Secret "basic" not found`},
		"missing key": {basic, fakeSecrets(map[string]map[string]string{"basic": {"username": "u"}}), probing.ReasonSecretUnavailable,
			`spec.basicAuthSecretRef: Secret "basic" has no key "password"`},
		"control character in a value": {basic, fakeSecrets(map[string]map[string]string{"basic": {"username": "u", "password": "p\nX-Injected: 1"}}),
			probing.ReasonSecretUnavailable, `spec.basicAuthSecretRef: the value of key "password" of Secret "basic" contains control characters`},
		"CA without a certificate": {withRefs(func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.TLS = &webcheckerv1alpha1.TLSOptions{CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}}
		}), fakeSecrets(map[string]map[string]string{"ca": {"ca.crt": "garbage"}}), probing.ReasonSecretUnavailable,
			`spec.tls.caSecretRef: key "ca.crt" of Secret "ca" holds no PEM-encoded certificate`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := checkspec.CheckFor(tc.wc, tc.secrets)
			var secretErr *checkspec.SecretError
			require.ErrorAs(t, err, &secretErr)
			assert.Equal(t, tc.wantReason, secretErr.Reason)
			assert.Equal(t, tc.wantMessage, secretErr.Message)
			assert.NotContains(t, secretErr.Message, "X-Injected")
		})
	}
}

// TestCheckForRejectsALongTimeout holds the timeout limit for objects
// stored before the CRD had it: CheckFor rejects what the API server now
// rejects, and accepts the limit itself.
func TestCheckForRejectsALongTimeout(t *testing.T) {
	tests := map[string]struct {
		timeout time.Duration
		wantErr string
	}{
		"at the limit":    {webcheckerv1alpha1.MaxTimeout, ""},
		"above the limit": {webcheckerv1alpha1.MaxTimeout + time.Second, "invalid target: timeout 1m1s must be at most 1m0s"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			wc := newChecker("ns", "slow", "example.com", "/")
			wc.Spec.Interval = &metav1.Duration{Duration: 10 * time.Minute}
			wc.Spec.Timeout = &metav1.Duration{Duration: tc.timeout}
			_, err := checkspec.CheckFor(wc, nil)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.wantErr)
		})
	}
}
