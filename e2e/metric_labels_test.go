package e2e_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestMetricLabelsAllowlist runs a manager with --metric-labels-allowlist
// and a real Prometheus server scraping it: the allowlisted labels of a
// WebChecker reach its series as label_<name> (sanitized), a checker
// without them has them empty, a relabelled checker's series follow, and
// webchecker_build_info is exported.
func TestMetricLabelsAllowlist(t *testing.T) {
	const (
		ns      = "e2e-metric-labels"
		leaseNS = "e2e-metric-labels-leases"
		within  = 15 * time.Second
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := testClient(t, ctx, ns, leaseNS)
	target := probetest.NewTarget()
	defer target.Close()

	fleet, err := framework.StartFleet(ctx, framework.FleetOptions{
		Name:     "labels",
		Replicas: 1,
		Manager: framework.ManagerOptions{
			Binary: managerPath, Kubeconfig: cp.KubeconfigPath, DNSServer: dns.Addr(),
			Args: []string{
				"--lease-namespace=" + leaseNS,
				"--ring-name=" + fmt.Sprintf("e2e-labels-%d", time.Now().UnixNano()),
				"--watch-namespaces=" + ns,
				"--metric-labels-allowlist=team,app.kubernetes.io/part-of",
			},
		},
		Prometheus: framework.PrometheusOptions{Dir: t.TempDir(), ScrapeInterval: scrapeInterval},
	})
	require.NoError(t, err)
	defer fleet.Stop()
	defer func() {
		if t.Failed() {
			t.Log(fleet.Logs(40))
		}
	}()
	prom := fleet.Prometheus

	create := func(name string, labels map[string]string) {
		require.NoError(t, c.Create(ctx, &webcheckerv1alpha1.WebChecker{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: webcheckerv1alpha1.WebCheckerSpec{
				Host:     target.URL(),
				Path:     "/" + name,
				Interval: &metav1.Duration{Duration: time.Second},
				Timeout:  &metav1.Duration{Duration: 500 * time.Millisecond},
			},
		}))
	}
	create("payments", map[string]string{"team": "payments", "app.kubernetes.io/part-of": "shop", "not-listed": "x"})
	create("unlabelled", nil)

	// series returns the label sets of webchecker_probe_success of the
	// checker name, as Prometheus stored them.
	series := func(name string) []model.Metric {
		v, err := prom.Query(ctx, `webchecker_probe_success{namespace="`+ns+`",name="`+name+`"}`)
		require.NoError(t, err)
		var out []model.Metric
		for _, s := range v {
			out = append(out, s.Metric)
		}
		return out
	}
	require.Eventually(t, func() bool { return len(series("payments")) == 1 && len(series("unlabelled")) == 1 }, within, 200*time.Millisecond,
		"payments: %v, unlabelled: %v", series("payments"), series("unlabelled"))

	labelled := series("payments")[0]
	assert.Equal(t, model.LabelValue("payments"), labelled["label_team"])
	assert.Equal(t, model.LabelValue("shop"), labelled["label_app_kubernetes_io_part_of"])
	assert.NotContains(t, labelled, model.LabelName("label_not_listed"), "only allowlisted labels are copied")
	// Prometheus drops empty labels: the unlabelled checker's series has
	// none, and the selector label_team="" matches it.
	unlabelled := series("unlabelled")[0]
	assert.NotContains(t, unlabelled, model.LabelName("label_team"))
	byTeam, err := prom.Query(ctx, `count by (label_team) (webchecker_probe_success{namespace="`+ns+`"})`)
	require.NoError(t, err)
	assert.Len(t, byTeam, 2, "routing by team: %v", byTeam)

	// Relabelled: the series follow without a spec change.
	wc := &webcheckerv1alpha1.WebChecker{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "payments"}, wc))
	patch := client.MergeFrom(wc.DeepCopy())
	wc.Labels["team"] = "checkout"
	require.NoError(t, c.Patch(ctx, wc, patch))
	require.Eventually(t, func() bool {
		v, err := prom.Query(ctx, `webchecker_probe_success{namespace="`+ns+`",name="payments",label_team="checkout"}`)
		return err == nil && len(v) == 1
	}, within, 200*time.Millisecond, "the relabelled checker's series: %v", series("payments"))

	// The build, once per replica.
	info, err := prom.Query(ctx, `webchecker_build_info`)
	require.NoError(t, err)
	require.Len(t, info, 1)
	assert.Equal(t, model.LabelValue(runtime.Version()), info[0].Metric["goversion"], "built by the toolchain running the test")
	assert.NotEmpty(t, info[0].Metric["version"])
	assert.NotEmpty(t, info[0].Metric["revision"])
	assert.Equal(t, model.SampleValue(1), info[0].Value)
}
