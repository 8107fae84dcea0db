package chart_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/networkio/webchecker/e2e/chart"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestChartInstall installs the chart with the Helm SDK into a fresh
// control plane of its own (no CRD preinstalled, as on a new cluster) and
// checks what `helm install` creates, that the shipped samples apply, that
// managers run with the chart's arguments and identity do their work and
// nothing more, and that `helm upgrade` and `helm uninstall` behave.
func TestChartInstall(t *testing.T) {
	ctx := context.Background()
	cluster, err := framework.StartEmptyControlPlane()
	require.NoError(t, err)
	defer func() { assert.NoError(t, cluster.Stop()) }()
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	ch, err := chart.Load()
	require.NoError(t, err)
	helm, err := chart.ActionConfig(cluster, chartNamespace)
	require.NoError(t, err)
	kubectl := framework.KubectlFor(t, cluster)

	// helm install webchecker charts/webchecker -n webchecker --create-namespace
	install := action.NewInstall(helm)
	install.ReleaseName, install.Namespace, install.CreateNamespace = chartRelease, chartNamespace, true
	installed, err := install.RunWithContext(ctx, ch, nil)
	require.NoError(t, err)
	assert.Equal(t, release.StatusDeployed, installed.Info.Status)
	assert.Contains(t, installed.Info.Notes, "kubectl get webcheckers", "NOTES.txt shows how to see a first WebChecker")
	kubectl("wait", "--for=condition=Established", "crd/webcheckers.test.network.io", "crd/webcheckermaintenances.test.network.io", "--timeout=30s")
	assert.Equal(t, "3", kubectl("get", "deployment", "webchecker", "-n", chartNamespace, "-o", "jsonpath={.spec.replicas}"))
	// kubectl fails when one of the named objects is missing.
	kubectl("get", "-n", chartNamespace, "serviceaccount/webchecker", "role/webchecker-manager", "rolebinding/webchecker-manager",
		"service/webchecker-metrics", "poddisruptionbudget/webchecker")
	kubectl("get", "clusterrole/webchecker-manager", "clusterrole/webchecker-metrics-reader", "clusterrolebinding/webchecker-manager",
		"flowschema/webchecker-leases")

	// kubectl apply -f config/samples/
	const checkers = "e2e-chart"
	kubectl("create", "namespace", checkers)
	applied := kubectl("apply", "-n", checkers, "-f", filepath.Join(root, "config", "samples"))
	assert.Contains(t, applied, "webchecker.test.network.io/badnews created")
	assert.Contains(t, applied, "webchecker.test.network.io/example-health created")

	t.Run("least privilege", func(t *testing.T) {
		deployment := deploymentOf(t, installed.Manifest)
		runChartManagers(t, cluster, deployment, checkers)
	})

	// helm upgrade with other values: fewer replicas, longer Leases, plain
	// metrics (which need neither TokenReviews nor a metrics-reader role),
	// no Secret access (no secrets rule), only namespaces labelled
	// servedLabel (a namespaces rule), no PDB.
	kubectl("label", "namespace", checkers, servedLabel)
	upgrade := action.NewUpgrade(helm)
	upgrade.Namespace = chartNamespace
	upgraded, err := upgrade.RunWithContext(ctx, chartRelease, ch, map[string]any{
		"replicaCount":        2,
		"sharding":            map[string]any{"leaseDuration": "20s", "leaseRenewInterval": "4s"},
		"metrics":             map[string]any{"secure": false},
		"secrets":             map[string]any{"access": false},
		"watch":               map[string]any{"namespaceSelector": servedLabel},
		"podDisruptionBudget": map[string]any{"enabled": false},
	})
	require.NoError(t, err)
	assert.Equal(t, release.StatusDeployed, upgraded.Info.Status)
	assert.Equal(t, 2, upgraded.Version)
	assert.Equal(t, "2", kubectl("get", "deployment", "webchecker", "-n", chartNamespace, "-o", "jsonpath={.spec.replicas}"))
	args := kubectl("get", "deployment", "webchecker", "-n", chartNamespace, "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	assert.Contains(t, args, "--lease-duration=20s")
	assert.Contains(t, args, "--metrics-secure=false")
	assert.Contains(t, args, "--secret-access=false")
	assert.Contains(t, args, "--namespace-selector="+servedLabel)
	clusterRole := kubectl("get", "clusterrole", "webchecker-manager", "-o", "yaml")
	assert.NotContains(t, clusterRole, "tokenreviews")
	assert.NotContains(t, clusterRole, "secrets")
	assert.Contains(t, clusterRole, "namespaces")
	t.Run("namespace selector, no Secret access", func(t *testing.T) {
		runChartManagersScoped(t, cluster, deploymentOf(t, upgraded.Manifest), checkers)
	})
	_, err = cluster.Kubectl("", "get", "clusterrole", "webchecker-metrics-reader")
	assert.ErrorContains(t, err, "NotFound", "upgrade removes what the new values do not render")
	_, err = cluster.Kubectl("", "get", "poddisruptionbudget", "webchecker", "-n", chartNamespace)
	assert.ErrorContains(t, err, "NotFound")

	// helm uninstall: nothing of the release is left but the CRD, which
	// the chart keeps on purpose, and with it the users' WebCheckers.
	uninstalled, err := action.NewUninstall(helm).Run(chartRelease)
	require.NoError(t, err)
	assert.Contains(t, uninstalled.Info, "webcheckers.test.network.io", "Helm reports the kept CRD")
	left := kubectl("get", "-n", chartNamespace, "-o", "name",
		"deployments,replicasets,pods,services,serviceaccounts,roles,rolebindings,poddisruptionbudgets,secrets,configmaps,leases")
	assert.Empty(t, strings.TrimSpace(left), "left in the release namespace (Helm keeps the namespace itself)")
	assert.Empty(t, strings.TrimSpace(kubectl("get", "clusterroles,clusterrolebindings,flowschemas", "-o", "name", "-l", "app.kubernetes.io/instance="+chartRelease)))
	kubectl("get", "crd", "webcheckers.test.network.io")
	assert.Contains(t, kubectl("get", "webcheckers", "-n", checkers, "-o", "name"), "webchecker.test.network.io/badnews")

	// Installing again adopts the kept CRD.
	reinstall := action.NewInstall(helm)
	reinstall.ReleaseName, reinstall.Namespace = chartRelease, chartNamespace
	reinstalled, err := reinstall.RunWithContext(ctx, ch, nil)
	require.NoError(t, err, "helm install after helm uninstall")
	assert.Equal(t, release.StatusDeployed, reinstalled.Info.Status)
}

// deploymentOf returns the Deployment in a release's manifest.
func deploymentOf(t *testing.T, manifest string) *appsv1.Deployment {
	t.Helper()
	objs, err := chart.DecodeManifest(manifest)
	require.NoError(t, err)
	return renderedAs[appsv1.Deployment](t, objs, "Deployment", "webchecker")
}

// chartManagerArgs turns the manager container's arguments into those of a
// local process that stands for the pod named podName. Two things change;
// every other argument is passed verbatim:
//   - $(POD_NAME) and $(POD_NAMESPACE) are expanded as the kubelet expands
//     them from the downward API (the test checks that the Deployment
//     declares them so);
//   - --metrics-bind-address and --health-probe-bind-address are dropped:
//     the replicas share one host here, so framework.StartManager binds
//     each to a free 127.0.0.1 port instead of :8443 and :8081.
//
// framework.StartManager also adds --kubeconfig (a pod gets the same
// ServiceAccount identity from its in-cluster config) and --dns-server (a
// loopback stub: tests resolve no real names).
func chartManagerArgs(t *testing.T, deployment appsv1.Deployment, podName string) []string {
	t.Helper()
	container := deployment.Spec.Template.Spec.Containers[0]
	downward := map[string]string{}
	for _, env := range container.Env {
		if env.ValueFrom != nil && env.ValueFrom.FieldRef != nil {
			downward[env.Name] = env.ValueFrom.FieldRef.FieldPath
		}
	}
	// POD_ZONE (the pod's zone label) is read from the environment, not
	// from an argument: the process here runs without it, as a pod whose
	// cluster does not copy the node's zone onto pods.
	require.Equal(t, map[string]string{
		"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace",
		"POD_ZONE": "metadata.labels['topology.kubernetes.io/zone']",
	}, downward)
	expand := strings.NewReplacer("$(POD_NAME)", podName, "$(POD_NAMESPACE)", deployment.Namespace)
	var args []string
	for _, arg := range container.Args {
		if strings.HasPrefix(arg, "--metrics-bind-address=") || strings.HasPrefix(arg, "--health-probe-bind-address=") {
			continue
		}
		args = append(args, expand.Replace(arg))
	}
	return args
}

// chartSecret is the Secret the "with-secret" checker sends a header from.
const (
	chartSecret      = "probe-token"
	chartSecretValue = "s3cret-token"
)

// applyChartCheckers creates, in namespace checkers, the Secret and two
// checkers of target: "local" and "with-secret", which sends the header
// X-Probe-Token from the Secret. Applying them again changes nothing.
func applyChartCheckers(t *testing.T, cluster *framework.ControlPlane, target *probetest.Target, checkers string) {
	t.Helper()
	secret := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"stringData":{"token":%q}}`, chartSecret, chartSecretValue)
	local := fmt.Sprintf(`{"apiVersion":"test.network.io/v1alpha1","kind":"WebChecker","metadata":{"name":"local"},"spec":{"host":%q,"interval":"1s","timeout":"500ms"}}`, target.URL())
	withSecret := fmt.Sprintf(`{"apiVersion":"test.network.io/v1alpha1","kind":"WebChecker","metadata":{"name":"with-secret"},"spec":{"host":%q,"path":"/with-secret","interval":"1s","timeout":"500ms",`+
		`"headers":[{"name":"X-Probe-Token","valueFrom":{"secretKeyRef":{"name":%q,"key":"token"}}}]}}`, target.URL(), chartSecret)
	for _, obj := range []string{secret, local, withSecret} {
		_, err := cluster.Kubectl(obj, "apply", "-n", checkers, "-f", "-")
		require.NoError(t, err)
	}
}

// checkerReady returns a checker's "Ready status/reason/shard".
func checkerReady(cluster *framework.ControlPlane, checkers, name string) string {
	out, _ := cluster.Kubectl("", "get", "wc", name, "-n", checkers, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}/{.status.shard}`)
	return out
}

// requireCheckerReady waits up to 30s until checkerReady of the checker
// starts with want ("status/reason/shard prefix"); on failure it reports
// the last state and the managers' logs.
func requireCheckerReady(t *testing.T, cluster *framework.ControlPlane, checkers, name, want string, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := checkerReady(cluster, checkers, name)
		if strings.HasPrefix(got, want) {
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "checker not in the expected state", "%s: %q, want %q…\n%s", name, got, want, logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startChartManagers starts one manager process per shard with the
// Deployment's arguments, authenticated by kubeconfig; they are killed at
// the end of the test if it did not stop them. logs returns their output.
func startChartManagers(t *testing.T, deployment *appsv1.Deployment, kubeconfig string, shards []string) (managers []*framework.Manager, logs func() string) {
	t.Helper()
	t.Cleanup(func() {
		for _, m := range managers {
			if !m.Exited() {
				_ = m.Kill()
			}
		}
	})
	for _, shard := range shards {
		args := chartManagerArgs(t, *deployment, shard)
		t.Logf("%s: manager %s", shard, strings.Join(args, " "))
		m, err := framework.StartManager(context.Background(), framework.ManagerOptions{
			Binary: managerPath, Kubeconfig: kubeconfig, ShardID: shard, DNSServer: dns.Addr(), Args: args,
		})
		require.NoError(t, err)
		managers = append(managers, m)
	}
	return managers, func() string {
		var b strings.Builder
		for _, m := range managers {
			b.WriteString(m.Log())
		}
		return b.String()
	}
}

// terminateChartManagers sends each replica SIGTERM and checks that they
// released their Leases in namespace ns.
func terminateChartManagers(t *testing.T, cluster *framework.ControlPlane, managers []*framework.Manager, ns string) {
	t.Helper()
	for _, m := range managers {
		require.NoError(t, m.Terminate(15*time.Second), m.Log())
	}
	leases, err := cluster.Kubectl("", "get", "leases", "-n", ns, "-o", "name")
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(leases), "Leases left after SIGTERM")
}

// assertRefused checks that the identity of kubeconfig is forbidden each
// kubectl command (arguments separated by spaces; stdin for -f -).
func assertRefused(t *testing.T, kubeconfig string, commands []struct{ stdin, args string }) {
	t.Helper()
	for _, refused := range commands {
		_, err := framework.KubectlAs(kubeconfig, refused.stdin, strings.Fields(refused.args)...)
		assert.ErrorContains(t, err, "forbidden", "kubectl %s as the chart's ServiceAccount", refused.args)
		t.Logf("refused: kubectl %s: %v", refused.args, err)
	}
}

// runChartManagers runs the chart's replicas (default values) as local
// processes with the Deployment's arguments, authenticated as its
// ServiceAccount, and checks that they probe, use a Secret, write status,
// Leases and Events, serve metrics only to authorized scrapers, and are
// refused what the chart did not grant: Secrets are read-only. Their Lease
// requests, and only those, go to the chart's FlowSchema.
func runChartManagers(t *testing.T, cluster *framework.ControlPlane, deployment *appsv1.Deployment, checkers string) {
	ctx := context.Background()
	ns := deployment.Namespace
	sa := deployment.Spec.Template.Spec.ServiceAccountName
	kubeconfig, token, err := cluster.ServiceAccountKubeconfig(ctx, ns, sa)
	require.NoError(t, err)

	target := probetest.NewTarget()
	defer target.Close()
	applyChartCheckers(t, cluster, target, checkers)

	shards := []string{"webchecker-6c9f7d-a", "webchecker-6c9f7d-b", "webchecker-6c9f7d-c"}
	managers, logs := startChartManagers(t, deployment, kubeconfig, shards)
	requireCheckerReady(t, cluster, checkers, "local", "True/ProbeSucceeded/webchecker-6c9f7d-", logs)
	requireCheckerReady(t, cluster, checkers, "with-secret", "True/ProbeSucceeded/webchecker-6c9f7d-", logs)
	var sent []string
	for _, hit := range target.Hits() {
		if hit.Path == "/with-secret" {
			sent = append(sent, hit.Header.Get("X-Probe-Token"))
		}
	}
	require.NotEmpty(t, sent)
	assert.Equal(t, chartSecretValue, sent[len(sent)-1], "the header value comes from the Secret: the chart grants reading it")
	requireCheckerReady(t, cluster, checkers, "badnews", "False/DNSFailed/webchecker-6c9f7d-", logs)
	require.Eventually(t, func() bool {
		holders, _ := cluster.Kubectl("", "get", "leases", "-n", ns, "-o", "jsonpath={.items[*].spec.holderIdentity}")
		return holders == strings.Join(shards, " ")
	}, 10*time.Second, 100*time.Millisecond, "every replica holds a Lease in the release namespace")
	// API Priority and Fairness puts the replicas' Lease requests, and
	// only those, in the leader-election priority level.
	flowSchema, err := cluster.Kubectl("", "get", "flowschema", "webchecker-leases", "-o", "jsonpath={.metadata.uid}")
	require.NoError(t, err)
	require.NotEmpty(t, flowSchema)
	assert.Equal(t, flowSchema, flowSchemaOf(t, kubeconfig, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases/"+shards[0]),
		"a replica's Lease read is classified by the chart's FlowSchema")
	assert.NotEqual(t, flowSchema, flowSchemaOf(t, kubeconfig, "/apis/test.network.io/v1alpha1/namespaces/"+checkers+"/webcheckers/local"),
		"the replicas' other requests are not")
	// The replicas may record Events (a first result that fails records
	// one; a first success records none).
	events, err := cluster.Kubectl("", "get", "events", "-n", checkers, "--field-selector", "involvedObject.name=badnews", "-o", "jsonpath={.items[*].reason}")
	require.NoError(t, err)
	assert.Contains(t, events, "ProbeFailed")
	assert.NotContains(t, logs(), "forbidden", "the chart's RBAC does not cover what the manager does")

	// The same identity is refused what the chart did not grant. It may
	// read Secrets (the default secrets.access=true), never write them.
	_, err = framework.KubectlAs(kubeconfig, "", "get", "secret", chartSecret, "-n", checkers)
	assert.NoError(t, err, "Secret access is on by default")
	intruder := `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"intruder","namespace":"default"}}`
	assertRefused(t, kubeconfig, []struct{ stdin, args string }{
		{"", "create secret generic intruder --from-literal=k=v --dry-run=server -n " + checkers},
		{"", "label secret " + chartSecret + " stolen=true --dry-run=server -n " + checkers},
		{"", "delete secret " + chartSecret + " --dry-run=server -n " + checkers},
		{"", "get leases -n kube-system"},
		{intruder, "create --dry-run=server -f -"},
		{"", "delete webchecker local -n " + checkers + " --dry-run=server"},
		{"", "get configmaps -n " + checkers},
		{"", "get pods -n " + ns},
		// Namespaces are read (the egress allowance annotation), never
		// written: the manager cannot give itself an allowance.
		{"", "annotate namespace " + checkers + " webchecker.test.network.io/egress-allow-cidrs=0.0.0.0/0 --dry-run=server"},
		// The cluster's networks are listed, nothing more about them.
		{"", "get endpointslices -n " + checkers},
		{"", "get node intruder"},
		{"", "delete servicecidr kubernetes --dry-run=server"},
	})

	// Secure metrics: TLS, and only for a bearer token that may GET /metrics.
	scrape := func(bearer string) (int, string) {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			// The manager's certificate is self-signed, as in the cluster.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback test server
		}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+managers[0].MetricsAddr+"/metrics", nil)
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, _ := scrape("")
	assert.Equal(t, http.StatusUnauthorized, code, "anonymous scrape")
	code, _ = scrape(token)
	assert.Equal(t, http.StatusForbidden, code, "the manager's own identity is not a metrics reader")
	for _, args := range [][]string{
		{"create", "namespace", "monitoring"},
		{"create", "serviceaccount", "prometheus", "-n", "monitoring"},
		{"create", "clusterrolebinding", "prometheus-webchecker", "--clusterrole=webchecker-metrics-reader", "--serviceaccount=monitoring:prometheus"},
	} {
		_, err := cluster.Kubectl("", args...)
		require.NoError(t, err)
	}
	_, promToken, err := cluster.ServiceAccountKubeconfig(ctx, "monitoring", "prometheus")
	require.NoError(t, err)
	var body string
	assert.Eventually(t, func() bool {
		code, body = scrape(promToken)
		return code == http.StatusOK
	}, 10*time.Second, 200*time.Millisecond, "a scraper bound to webchecker-metrics-reader: %d %s", code, body)
	assert.Contains(t, body, "controller_runtime_reconcile_total")

	// SIGTERM: each replica releases its Lease.
	terminateChartManagers(t, cluster, managers, ns)
}

// servedLabel selects the namespaces served after the upgrade.
const servedLabel = "webchecker.test.network.io/served=true"

// runChartManagersScoped runs the replicas of a release upgraded to
// secrets.access=false and watch.namespaceSelector=servedLabel: without a
// single forbidden request they serve the checkers of the labelled
// namespace checkers and leave those of another namespace alone; a checker
// that needs a Secret reports SecretAccessDisabled, and the identity may
// not read Secrets at all.
func runChartManagersScoped(t *testing.T, cluster *framework.ControlPlane, deployment *appsv1.Deployment, checkers string) {
	ns := deployment.Namespace
	kubeconfig, _, err := cluster.ServiceAccountKubeconfig(context.Background(), ns, deployment.Spec.Template.Spec.ServiceAccountName)
	require.NoError(t, err)
	target := probetest.NewTarget()
	defer target.Close()
	applyChartCheckers(t, cluster, target, checkers)
	const unserved = "e2e-chart-unserved"
	_, err = cluster.Kubectl("", "create", "namespace", unserved)
	require.NoError(t, err)
	applyChartCheckers(t, cluster, target, unserved)

	// Other shard names than before: status.shard shows these replicas
	// wrote the status.
	managers, logs := startChartManagers(t, deployment, kubeconfig, []string{"webchecker-7d8e0a-a", "webchecker-7d8e0a-b"})
	requireCheckerReady(t, cluster, checkers, "local", "True/ProbeSucceeded/webchecker-7d8e0a-", logs)
	requireCheckerReady(t, cluster, checkers, "with-secret", "False/SecretAccessDisabled/webchecker-7d8e0a-", logs)
	for _, hit := range target.Hits() {
		assert.Empty(t, hit.Header.Get("X-Probe-Token"), "no Secret value is sent without Secret access")
	}
	assert.Equal(t, "//", checkerReady(cluster, unserved, "local"), "a checker in a namespace without the label is not served")
	assert.NotContains(t, logs(), "forbidden", "the manager must not even try to read or watch Secrets, and may watch namespaces")
	assertRefused(t, kubeconfig, []struct{ stdin, args string }{
		{"", "get secrets -n " + checkers},
		{"", "get secret " + chartSecret + " -n " + checkers},
	})
	terminateChartManagers(t, cluster, managers, ns)
}

// flowSchemaOf is the UID of the FlowSchema that the API server's Priority
// and Fairness classified a GET of path into, made with the identity of
// kubeconfig (the API server names it in a response header).
func flowSchemaOf(t *testing.T, kubeconfig, path string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	httpClient, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	resp, err := httpClient.Get(strings.TrimSuffix(cfg.Host, "/") + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s", path)
	return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")
}
