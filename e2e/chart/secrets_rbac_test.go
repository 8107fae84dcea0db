package chart_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"

	"github.com/networkio/webchecker/e2e/chart"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestChartSecretsOnlyInWatchedNamespaces installs the chart with
// watch.namespaces into a control plane of its own and checks, as the
// chart's ServiceAccount, that Secrets are readable in the watched
// namespace and nowhere else (another namespace, the release namespace
// with Helm's release Secrets, the whole cluster), and that replicas run
// with the Deployment's arguments send a header from a Secret of the
// watched namespace without a single forbidden request.
func TestChartSecretsOnlyInWatchedNamespaces(t *testing.T) {
	ctx := context.Background()
	cluster, err := framework.StartEmptyControlPlane()
	require.NoError(t, err)
	defer func() { assert.NoError(t, cluster.Stop()) }()
	ch, err := chart.Load()
	require.NoError(t, err)
	helm, err := chart.ActionConfig(cluster, chartNamespace)
	require.NoError(t, err)
	kubectl := framework.KubectlFor(t, cluster)

	const watched, unwatched = "e2e-chart-watched", "e2e-chart-unwatched"
	kubectl("create", "namespace", watched)
	kubectl("create", "namespace", unwatched)
	install := action.NewInstall(helm)
	install.ReleaseName, install.Namespace, install.CreateNamespace = chartRelease, chartNamespace, true
	installed, err := install.RunWithContext(ctx, ch, map[string]any{"replicaCount": 1, "watch": map[string]any{"namespaces": []any{watched}}})
	require.NoError(t, err)
	kubectl("wait", "--for=condition=Established", "crd/webcheckers.test.network.io", "--timeout=30s")
	assert.NotContains(t, kubectl("get", "clusterrole", "webchecker-manager", "-o", "yaml"), "secrets")

	deployment := deploymentOf(t, installed.Manifest)
	kubeconfig, _, err := cluster.ServiceAccountKubeconfig(ctx, chartNamespace, deployment.Spec.Template.Spec.ServiceAccountName)
	require.NoError(t, err)
	target := probetest.NewTarget()
	defer target.Close()
	applyChartCheckers(t, cluster, target, watched)
	applyChartCheckers(t, cluster, target, unwatched)

	// The ServiceAccount reads Secrets in the watched namespace only.
	for _, verb := range []string{"get", "list", "watch"} {
		out, err := framework.KubectlAs(kubeconfig, "", "auth", "can-i", verb, "secrets", "-n", watched)
		assert.NoError(t, err, "%s secrets in %s: %s", verb, watched, out)
		assert.Equal(t, "yes", strings.TrimSpace(out), "%s secrets in %s", verb, watched)
		for _, elsewhere := range [][]string{{"-n", unwatched}, {"-n", chartNamespace}, {"-n", "default"}, {"--all-namespaces"}} {
			out, _ := framework.KubectlAs(kubeconfig, "", append([]string{"auth", "can-i", verb, "secrets"}, elsewhere...)...)
			assert.Equal(t, "no", strings.TrimSpace(out), "%s secrets %v", verb, elsewhere)
		}
	}
	_, err = framework.KubectlAs(kubeconfig, "", "get", "secret", chartSecret, "-n", watched)
	assert.NoError(t, err, "the Role grants reading the watched namespace's Secrets")
	assertRefused(t, kubeconfig, []struct{ stdin, args string }{
		{"", "get secret " + chartSecret + " -n " + unwatched},
		{"", "get secrets -n " + unwatched},
		{"", "get secrets -n " + chartNamespace}, // Helm's release Secrets live here
		{"", "get secrets --all-namespaces"},
		{"", "delete secret " + chartSecret + " --dry-run=server -n " + watched},
	})

	// The replicas read the Secret through their cache of the watched
	// namespace and never ask for more.
	managers, logs := startChartManagers(t, deployment, kubeconfig, []string{"webchecker-5b4c3d-a"})
	requireCheckerReady(t, cluster, watched, "with-secret", "True/ProbeSucceeded/webchecker-5b4c3d-", logs)
	var sent []string
	for _, hit := range target.Hits() {
		if hit.Path == "/with-secret" {
			sent = append(sent, hit.Header.Get("X-Probe-Token"))
		}
	}
	require.NotEmpty(t, sent)
	assert.Equal(t, chartSecretValue, sent[len(sent)-1], "the header value comes from the watched namespace's Secret")
	assert.Equal(t, "//", checkerReady(cluster, unwatched, "with-secret"), "a checker outside watch.namespaces is not served")
	assert.NotContains(t, logs(), "forbidden", "the manager reads Secrets only where the chart grants it")
	terminateChartManagers(t, cluster, managers, chartNamespace)
}
