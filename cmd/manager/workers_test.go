package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/probing/scheduler"
)

// TestReplicaRunsItsReconcileWorkers: the replica's controller runs as many
// reconcile workers as replicaOptions.reconcileWorkers says
// (controller-runtime reports them when the controller starts).
func TestReplicaRunsItsReconcileWorkers(t *testing.T) {
	cp := controlPlane(t)
	startReplica(t, cp.Config, replicaOptions{
		shardID:          "workers",
		prober:           probing.NewHTTPProber(probing.ProberOptions{DNSServer: probetest.NewTestDNSServer(t, nil).Addr()}),
		leaseNamespace:   "default",
		ringName:         "workers-test",
		reconcileWorkers: 5,
	})
	require.Eventually(t, func() bool { return maxConcurrentReconciles(t) == 5 }, 10*time.Second, 50*time.Millisecond,
		"controller_runtime_max_concurrent_reconciles is %v", maxConcurrentReconciles(t))
}

// maxConcurrentReconciles is the webchecker controller's
// controller_runtime_max_concurrent_reconciles, or -1.
func maxConcurrentReconciles(t *testing.T) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "controller_runtime_max_concurrent_reconciles" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "webchecker" {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

func TestFirstTurnsWithin(t *testing.T) {
	for jitter, want := range map[time.Duration]time.Duration{
		0:                      scheduler.DefaultInitialJitter,
		-1:                     0,
		250 * time.Millisecond: 250 * time.Millisecond,
	} {
		assert.Equal(t, want, firstTurnsWithin(jitter), "jitter %s", jitter)
	}
}
