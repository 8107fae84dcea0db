package scrapeauth_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/networkio/webchecker/controllers/metrics/scrapeauth"
	"github.com/networkio/webchecker/e2e/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	var err error
	if cp, err = framework.StartControlPlane(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// reviews counts the review requests that reach the API server.
type reviews struct {
	next  http.RoundTripper
	count atomic.Int32
}

func (r *reviews) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/tokenreviews") || strings.HasSuffix(req.URL.Path, "/subjectaccessreviews") {
		r.count.Add(1)
	}
	return r.next.RoundTrip(req)
}

// guarded returns a server whose handler is guarded by the filter, and
// the counter of the review requests it makes.
func guarded(t *testing.T, config *rest.Config) (*httptest.Server, *reviews) {
	t.Helper()
	transport, err := rest.TransportFor(config)
	require.NoError(t, err)
	counted := &reviews{next: transport}
	filter, err := scrapeauth.FilterProvider(config, &http.Client{Transport: counted})
	require.NoError(t, err)
	handler, err := filter(testr.New(t), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "metrics; authorization header %q", r.Header.Get("Authorization"))
	}))
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv, counted
}

func get(t *testing.T, url, authorization string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

// TestOnlyAuthorizedClientsAreServed checks the filter against the API
// server's own decisions: ServiceAccount tokens, RBAC on the /metrics
// non-resource URL.
func TestOnlyAuthorizedClientsAreServed(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scrapeauth-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"reader", "stranger"} {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	role := "scrapeauth-metrics-reader-" + ns.Name
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: ns.Name}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, readerToken, err := cp.ServiceAccountKubeconfig(ctx, ns.Name, "reader")
	require.NoError(t, err)
	_, strangerToken, err := cp.ServiceAccountKubeconfig(ctx, ns.Name, "stranger")
	require.NoError(t, err)

	srv, counted := guarded(t, cp.Config)
	tests := []struct {
		name, path, authorization string
		want                      int
	}{
		{name: "no token", path: "/metrics", want: http.StatusUnauthorized},
		{name: "not a bearer token", path: "/metrics", authorization: "Basic cmVhZGVyOnNlY3JldA==", want: http.StatusUnauthorized},
		{name: "empty bearer token", path: "/metrics", authorization: "Bearer ", want: http.StatusUnauthorized},
		{name: "a token the API server rejects", path: "/metrics", authorization: "Bearer not-a-token", want: http.StatusUnauthorized},
		{name: "a ServiceAccount without the role", path: "/metrics", authorization: "Bearer " + strangerToken, want: http.StatusForbidden},
		{name: "the reader, another path", path: "/debug/pprof/", authorization: "Bearer " + readerToken, want: http.StatusForbidden},
		{name: "the reader", path: "/metrics", authorization: "Bearer " + readerToken, want: http.StatusOK},
		{name: "the reader, scheme in lower case", path: "/metrics", authorization: "bearer " + readerToken, want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, header := get(t, srv.URL+tt.path, tt.authorization)
			assert.Equal(t, tt.want, code, body)
			if tt.want == http.StatusOK {
				assert.Equal(t, `metrics; authorization header ""`, body, "served, without the token")
			} else {
				assert.NotContains(t, body, "metrics;")
			}
			if tt.want == http.StatusUnauthorized {
				assert.Contains(t, header.Get("WWW-Authenticate"), "Bearer")
			}
		})
	}

	// Decisions are cached: scraping again asks the API server nothing.
	asked := counted.count.Load()
	for range 5 {
		code, _, _ := get(t, srv.URL+"/metrics", "Bearer "+readerToken)
		require.Equal(t, http.StatusOK, code)
		code, _, _ = get(t, srv.URL+"/metrics", "Bearer "+strangerToken)
		require.Equal(t, http.StatusForbidden, code)
	}
	assert.Equal(t, asked, counted.count.Load(), "review requests while the decisions were cached")
}

// TestUnreachableAPIServerServesNothing: when the API server cannot be
// asked, the filter retries for a few seconds, then answers 500 and serves
// no metrics.
func TestUnreachableAPIServerServesNothing(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	srv, _ := guarded(t, &rest.Config{Host: closed.URL, Timeout: time.Second})
	code, body, _ := get(t, srv.URL+"/metrics", "Bearer some-token")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.NotContains(t, body, "metrics;")
}
