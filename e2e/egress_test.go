package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestEgressDefaultDeniesLoopback runs the built manager without the tests'
// loopback allowance (--allow-cidrs= after framework.LoopbackAllowance):
// a checker of a loopback target is Ready False EgressDenied, its message
// names the rule, the target is never reached; a cluster admin's
// annotation on the namespace opens it without a restart, and removing it
// closes it again.
func TestEgressDefaultDeniesLoopback(t *testing.T) {
	const (
		ns      = "e2e-egress"
		leaseNS = "e2e-egress-leases"
		within  = 20 * time.Second
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := testClient(t, ctx, ns, leaseNS)
	target := probetest.NewTarget()
	defer target.Close()

	// The last value of --allow-cidrs wins: the manager's defaults.
	mgr := startManager(t, ctx, "egress-0", ns, leaseNS, "--allow-cidrs=")

	require.NoError(t, c.Create(ctx, &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "loopback"},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host: target.URL(), Interval: &metav1.Duration{Duration: time.Second}, Timeout: &metav1.Duration{Duration: 500 * time.Millisecond},
		},
	}))
	cond := awaitReady(t, ctx, c, ns, "loopback", metav1.ConditionFalse, "EgressDenied", within)
	assert.Contains(t, cond.Message, "egress to 127.0.0.1 denied: loopback (default)")
	assert.Empty(t, target.Hits(), "a denied target was reached")

	annotate := func(value string) {
		t.Helper()
		_, err := cp.Kubectl("", "annotate", "--overwrite", "namespace", ns, value)
		require.NoError(t, err)
	}
	annotate("webchecker.test.network.io/egress-allow-cidrs=127.0.0.1")
	awaitReady(t, ctx, c, ns, "loopback", metav1.ConditionTrue, "ProbeSucceeded", within)
	assert.NotEmpty(t, target.Hits())

	annotate("webchecker.test.network.io/egress-allow-cidrs-")
	cond = awaitReady(t, ctx, c, ns, "loopback", metav1.ConditionFalse, "EgressDenied", within)
	assert.Contains(t, cond.Message, "egress to 127.0.0.1 denied: loopback (default)")
	assert.NotContains(t, mgr.Log(), "forbidden")
}
