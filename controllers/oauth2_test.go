package controllers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
)

// TestOAuth2ClientCredentialsNeverShow: a checker with spec.oauth2 reads
// its client from the Secret, fetches a token and probes with it (Ready
// True); a wrong secret reads TokenFailed; neither the client's secret
// nor a token shows in the status, the Events or the logs.
func TestOAuth2ClientCredentialsNeverShow(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	secret, token := randomValue(t), randomValue(t)
	var issued atomic.Int64
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, got, ok := r.BasicAuth()
		if !ok || id != "probe" || got != secret || r.FormValue("grant_type") != "client_credentials" || r.FormValue("scope") != "health" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		issued.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "bearer", "expires_in": 3600})
	}))
	t.Cleanup(endpoint.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(api.Close)

	putSecret(t, ns, "oauth", map[string]string{"client-id": "probe", "client-secret": secret + "\n"})
	wc := newChecker(ns, "oauth2", api.URL, "/health")
	wc.Spec.OAuth2 = &webcheckerv1alpha1.OAuth2{
		TokenURL: endpoint.URL + "/token", CredentialsSecretRef: webcheckerv1alpha1.SecretReference{Name: "oauth"},
		Scopes: []webcheckerv1alpha1.OAuth2Scope{"health"},
	}
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", secretTimeout)
	assert.Positive(t, issued.Load())

	putSecret(t, ns, "oauth", map[string]string{"client-id": "probe", "client-secret": "not-" + secret})
	refused := waitReady(t, key, metav1.ConditionFalse, "TokenFailed", secretTimeout)
	assert.Equal(t, `OAuth2 token request to "`+endpoint.URL+`/token": the token endpoint answered 401 Unauthorized`, ready(refused).Message)

	// The Event of the failure, written after the status, carries the
	// refused request's message too.
	require.Eventually(t, func() bool { return eventRecorded(ns, key.Name, controllers.EventReasonProbeFailed) }, secretTimeout, poll,
		"no %s Event recorded", controllers.EventReasonProbeFailed)
	stored, err := json.Marshal(getChecker(t, key))
	require.NoError(t, err)
	var events eventsv1.EventList
	require.NoError(t, k8sClient.List(context.Background(), &events, client.InNamespace(ns)))
	require.NotEmpty(t, events.Items)
	recorded, err := json.Marshal(events)
	require.NoError(t, err)
	lines := logs.Lines()
	for _, v := range []string{secret, token} {
		assert.NotContains(t, string(stored), v, "a credential in the WebChecker")
		assert.NotContains(t, string(recorded), v, "a credential in an Event")
		for _, line := range lines {
			if !assert.False(t, strings.Contains(line, v), "a credential in the logs") {
				break
			}
		}
	}
	assert.True(t, logsMention(lines, key), "the logs recorded nothing about the checker: the check above proves nothing")
}
