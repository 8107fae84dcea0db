package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestRedirectDowngradeDropsCredentials is the downgrade against
// the built manager: https://127.0.0.1:P redirects to http://127.0.0.1:P
// (one port serving both), whose /landing answers 200 only to a request
// with credentials. The checker with a bearer token and a header from a
// Secret reads Ready=False 401 and the plain requests carry neither;
// the same credentials on a redirect within the origin still reach it
// (Ready=True); no status, Event or log line holds a Secret value.
func TestRedirectDowngradeDropsCredentials(t *testing.T) {
	const (
		ns      = "e2e-redirect-credentials"
		leaseNS = "e2e-redirect-credentials-leases"
		token   = "t0ken-of-the-secret"
		apiKey  = "k3y-of-the-secret"
		within  = 20 * time.Second
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := testClient(t, ctx, ns, leaseNS)

	cert := probetest.NewCertificate(t, "127.0.0.1", time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	var mu sync.Mutex
	var plain []http.Header // the headers of every plain-HTTP request
	server := probetest.NewTestDualServer(t, cert.TLS, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			mu.Lock()
			plain = append(plain, r.Header.Clone())
			mu.Unlock()
		}
		switch r.URL.Path {
		case "/downgrade":
			http.Redirect(w, r, "http://"+r.Host+"/landing", http.StatusFound)
		case "/same-origin":
			http.Redirect(w, r, "/landing", http.StatusFound)
		case "/landing":
			if r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("X-Api-Key") != apiKey {
				w.WriteHeader(http.StatusUnauthorized)
			}
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))

	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe-credentials"}, Data: map[string][]byte{
		"token": []byte(token), "api-key": []byte(apiKey), "ca.crt": cert.PEM,
	}}))
	mgr := startManager(t, ctx, "redirect-credentials-0", ns, leaseNS)

	for name, path := range map[string]string{"downgrade": "/downgrade", "same-origin": "/same-origin"} {
		require.NoError(t, c.Create(ctx, &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host: "https://" + server.Addr(), Path: path,
			Interval: &metav1.Duration{Duration: time.Second}, Timeout: &metav1.Duration{Duration: 900 * time.Millisecond},
			TLS:                  &webcheckerv1alpha1.TLSOptions{CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "probe-credentials", Key: "ca.crt"}},
			BearerTokenSecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "probe-credentials", Key: "token"},
			Headers: []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api-Key", ValueFrom: &webcheckerv1alpha1.HeaderValueSource{
				SecretKeyRef: webcheckerv1alpha1.SecretKeySelector{Name: "probe-credentials", Key: "api-key"},
			}}},
		}}))
	}
	awaitReady(t, ctx, c, ns, "same-origin", metav1.ConditionTrue, "ProbeSucceeded", within)
	cond := awaitReady(t, ctx, c, ns, "downgrade", metav1.ConditionFalse, "UnexpectedStatus", within)
	assert.Contains(t, cond.Message, "401", "the plain request came without the credentials")

	mu.Lock()
	seen := append([]http.Header(nil), plain...)
	mu.Unlock()
	require.NotEmpty(t, seen, "the downgrade was followed")
	for i, header := range seen {
		assert.Empty(t, header.Values("Authorization"), "plain request %d carried Authorization", i)
		assert.Empty(t, header.Values("X-Api-Key"), "plain request %d carried the header from the Secret", i)
	}

	var checkers webcheckerv1alpha1.WebCheckerList
	require.NoError(t, c.List(ctx, &checkers, client.InNamespace(ns)))
	var events corev1.EventList
	require.NoError(t, c.List(ctx, &events, client.InNamespace(ns)))
	for _, secret := range []string{token, apiKey} {
		for _, wc := range checkers.Items {
			assert.NotContains(t, fmt.Sprintf("%+v", wc.Status), secret, wc.Name)
		}
		for _, ev := range events.Items {
			assert.NotContains(t, ev.Message, secret, ev.Reason)
		}
		assert.NotContains(t, mgr.Log(), secret)
	}
}
