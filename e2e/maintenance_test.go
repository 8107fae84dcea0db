package e2e_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

const (
	maintenanceNamespace      = "e2e-maintenance"
	maintenanceLeaseNamespace = "e2e-maintenance-leases"
	// maintenanceSelected of maintenanceCheckers carry the label the
	// maintenance selects.
	maintenanceCheckers = 30
	maintenanceSelected = 20
	// maintenanceWithin is how soon after a window opens or closes every
	// selected checker must say so.
	maintenanceWithin = 2 * time.Second
)

// TestMaintenanceWindowAcrossReplicas runs three replicas of the built
// manager, 30 checkers of which a WebCheckerMaintenance selects 20 (spread
// over the replicas, each writing the status of those it owns), and a
// one-off window a few seconds ahead: every selected checker turns
// Maintenance True within 2 s of the window's start and False within 2 s
// of its end; the 10 others never get the condition; all stay Ready.
func TestMaintenanceWindowAcrossReplicas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	for _, ns := range []string{maintenanceNamespace, maintenanceLeaseNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	ringName := fmt.Sprintf("e2e-maintenance-%d", time.Now().UnixNano())
	for _, id := range []string{"maint-a", "maint-b", "maint-c"} {
		m, err := framework.StartManager(ctx, framework.ManagerOptions{
			Binary: managerPath, Kubeconfig: cp.KubeconfigPath, ShardID: id, DNSServer: dns.Addr(),
			Args: []string{"--lease-namespace=" + maintenanceLeaseNamespace, "--ring-name=" + ringName,
				"--lease-duration=5s", "--lease-renew-interval=1s", "--zap-time-encoding=rfc3339nano"},
		})
		require.NoError(t, err)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("----- last lines of manager %s -----\n%s", id, tail(m.Log(), 40))
				if dir := os.Getenv("WEBCHECKER_E2E_LOG_DIR"); dir != "" {
					_ = os.WriteFile(dir+"/"+id+".log", []byte(m.Log()), 0o644)
				}
			}
			if !m.Exited() {
				_ = m.Kill()
			}
		})
	}
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		_ = c.DeleteAllOf(cctx, &webcheckerv1alpha1.WebChecker{}, client.InNamespace(maintenanceNamespace))
		_ = c.DeleteAllOf(cctx, &webcheckerv1alpha1.WebCheckerMaintenance{}, client.InNamespace(maintenanceNamespace))
	})
	for i := range maintenanceCheckers {
		wc := &webcheckerv1alpha1.WebChecker{
			ObjectMeta: metav1.ObjectMeta{Namespace: maintenanceNamespace, Name: fmt.Sprintf("checker-%02d", i)},
			Spec: webcheckerv1alpha1.WebCheckerSpec{Host: target.URL(), Path: "/",
				Interval: &metav1.Duration{Duration: 2 * time.Second}, Timeout: &metav1.Duration{Duration: time.Second}},
		}
		if i < maintenanceSelected {
			wc.Labels = map[string]string{"tier": "db"}
		}
		require.NoError(t, c.Create(ctx, wc))
	}
	shards := map[string]int{}
	require.True(t, poll(time.Minute, 200*time.Millisecond, func() bool {
		list := maintenanceList(ctx, t, c)
		clear(shards)
		for _, wc := range list {
			if r := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
				return false
			}
			shards[wc.Status.Shard]++
		}
		return len(list) == maintenanceCheckers && len(shards) == 3
	}), "every checker Ready, owned by each of the 3 replicas: %v", shards)

	start := time.Now().Add(6 * time.Second).Truncate(time.Second)
	end := start.Add(6 * time.Second)
	require.NoError(t, c.Create(ctx, &webcheckerv1alpha1.WebCheckerMaintenance{
		ObjectMeta: metav1.ObjectMeta{Namespace: maintenanceNamespace, Name: "db-upgrade"},
		Spec: webcheckerv1alpha1.WebCheckerMaintenanceSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}},
			Windows:  []webcheckerv1alpha1.MaintenanceWindow{{Start: &metav1.Time{Time: start}, End: &metav1.Time{Time: end}}},
		},
	}))

	opened, closed := map[string]time.Time{}, map[string]time.Time{}
	require.True(t, poll(time.Until(end)+maintenanceWithin+5*time.Second, 100*time.Millisecond, func() bool {
		now := time.Now()
		for _, wc := range maintenanceList(ctx, t, c) {
			m := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionMaintenance)
			if wc.Labels["tier"] != "db" {
				assert.Nil(t, m, "%s is not selected, yet has a Maintenance condition", wc.Name)
				continue
			}
			if m == nil {
				continue
			}
			if _, seen := opened[wc.Name]; !seen && m.Status == metav1.ConditionTrue {
				opened[wc.Name] = now
			}
			if _, seen := opened[wc.Name]; seen && m.Status == metav1.ConditionFalse {
				if _, done := closed[wc.Name]; !done {
					closed[wc.Name] = now
				}
			}
		}
		return len(closed) == maintenanceSelected
	}), "%d of %d selected checkers went in and out of maintenance", len(closed), maintenanceSelected)

	for name, at := range opened {
		assert.False(t, at.Before(start), "%s in maintenance %s before the window opened", name, start.Sub(at))
		assert.LessOrEqual(t, at.Sub(start), maintenanceWithin, "%s went into maintenance late", name)
	}
	for name, at := range closed {
		assert.False(t, at.Before(end), "%s out of maintenance %s before the window closed", name, end.Sub(at))
		assert.LessOrEqual(t, at.Sub(end), maintenanceWithin, "%s came out of maintenance late", name)
	}
	for _, wc := range maintenanceList(ctx, t, c) {
		r := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
		require.NotNil(t, r)
		assert.Equal(t, metav1.ConditionTrue, r.Status, "%s: probes go on in maintenance", wc.Name)
	}
}

func maintenanceList(ctx context.Context, t *testing.T, c client.Client) []webcheckerv1alpha1.WebChecker {
	t.Helper()
	var list webcheckerv1alpha1.WebCheckerList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(maintenanceNamespace)))
	return list.Items
}
