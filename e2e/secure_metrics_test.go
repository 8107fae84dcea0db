package e2e_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestSecureMetrics runs the manager with --metrics-secure as a user that
// has only the generated RBAC rules, and checks that its metrics endpoint
// serves HTTPS only to clients the API server authenticates and authorizes
// for GET /metrics, and that a real Prometheus scrapes it with a
// ServiceAccount token, as the chart's ServiceMonitor does.
func TestSecureMetrics(t *testing.T) {
	const (
		ns             = "e2e-secure-metrics"
		leaseNamespace = "webchecker-system" // where config/rbac puts the Lease Role
		user           = "webchecker-secure-metrics"
		checker        = "guarded"
	)
	kubeconfig := generatedRBACUser(t, user, ns, leaseNamespace)
	kubectl := framework.KubectlFor(t, cp)
	// A scraper allowed to GET /metrics, and a stranger who is not.
	kubectl("create", "serviceaccount", "scraper", "-n", ns)
	kubectl("create", "serviceaccount", "stranger", "-n", ns)
	kubectl("create", "clusterrole", "e2e-metrics-reader", "--verb=get", "--non-resource-url=/metrics")
	kubectl("create", "clusterrolebinding", "e2e-metrics-reader", "--clusterrole=e2e-metrics-reader", "--serviceaccount="+ns+":scraper")
	scraperToken := strings.TrimSpace(kubectl("create", "token", "scraper", "-n", ns))
	strangerToken := strings.TrimSpace(kubectl("create", "token", "stranger", "-n", ns))

	target := probetest.NewTarget()
	defer target.Close()
	mgr, err := framework.StartManager(context.Background(), framework.ManagerOptions{
		Binary: managerPath, Kubeconfig: kubeconfig, ShardID: "secure-0", DNSServer: dns.Addr(),
		Args: []string{"--metrics-secure", "--lease-namespace=" + leaseNamespace, "--ring-name=e2e-secure-metrics"},
	})
	require.NoError(t, err)
	defer func() {
		if !mgr.Exited() {
			_ = mgr.Kill()
		}
		if t.Failed() {
			t.Logf("----- manager log -----\n%s", tail(mgr.Log(), 60))
		}
	}()
	wc := fmt.Sprintf(`{"apiVersion":"test.network.io/v1alpha1","kind":"WebChecker","metadata":{"name":%q},"spec":{"host":%q,"interval":"1s","timeout":"500ms"}}`, checker, target.URL())
	_, err = cp.Kubectl(wc, "apply", "-n", ns, "-f", "-")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, _ := cp.Kubectl("", "get", "wc", checker, "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return out == "True"
	}, 15*time.Second, 100*time.Millisecond)

	// The certificate is self-signed (controller-runtime makes one when
	// none is given), so the client skips verification; what matters here
	// is who may read.
	httpsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a loopback test server
	scrape := func(token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+mgr.MetricsAddr+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpsClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	series := fmt.Sprintf(`webchecker_probe_success{name=%q,namespace=%q,shard="secure-0",zone=""} 1`, checker, ns)
	tests := map[string]struct {
		token    string
		wantCode int
	}{
		"no token":                       {token: "", wantCode: http.StatusUnauthorized},
		"a token the API rejects":        {token: "not-a-token", wantCode: http.StatusUnauthorized},
		"a ServiceAccount not permitted": {token: strangerToken, wantCode: http.StatusForbidden},
		"the metrics reader":             {token: scraperToken, wantCode: http.StatusOK},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body := scrape(tc.token)
			assert.Equal(t, tc.wantCode, code, body)
			if tc.wantCode == http.StatusOK {
				assert.Contains(t, body, series)
			} else {
				assert.NotContains(t, body, "webchecker_")
			}
		})
	}
	// Plain HTTP gets nothing.
	if resp, err := http.Get("http://" + mgr.MetricsAddr + "/metrics"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode)
		assert.NotContains(t, string(body), "webchecker_")
	}

	// A real Prometheus scrapes it with the reader's token.
	prom, err := framework.StartPrometheus(context.Background(), framework.PrometheusOptions{
		Dir: t.TempDir(), Targets: []string{mgr.MetricsAddr}, ScrapeInterval: time.Second, BearerToken: scraperToken,
	})
	require.NoError(t, err)
	defer func() { _ = prom.Terminate(10 * time.Second) }()
	expr := fmt.Sprintf(`webchecker_probe_success{namespace=%q,name=%q}`, ns, checker)
	require.Eventually(t, func() bool {
		v, ok, err := prom.Scalar(context.Background(), expr)
		return err == nil && ok && v == 1
	}, 15*time.Second, 200*time.Millisecond, "Prometheus never scraped %s; targets: %v", expr, targetsOr(prom))

	assert.NotContains(t, mgr.Log(), "forbidden", "the generated RBAC rules do not cover what the manager does")
	require.NoError(t, mgr.Terminate(15*time.Second))
}

func targetsOr(prom *framework.Prometheus) any {
	targets, err := prom.Targets(context.Background())
	if err != nil {
		return err
	}
	return targets
}
