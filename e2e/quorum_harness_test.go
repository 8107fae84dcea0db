package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

// quorumEnv is the state of TestQuorumProbing.
type quorumEnv struct {
	t        *testing.T
	ctx      context.Context
	c        client.Client
	ringName string
	managers map[string]*framework.Manager
	zones    map[string]string // live replica -> zone
}

func newQuorumEnv(t *testing.T) *quorumEnv {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(&cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	for _, ns := range []string{quorumNamespace, quorumLeaseNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	e := &quorumEnv{t: t, ctx: ctx, c: c, ringName: fmt.Sprintf("e2e-quorum-%d", time.Now().UnixNano()),
		managers: map[string]*framework.Manager{}, zones: map[string]string{}}
	t.Cleanup(func() {
		if t.Failed() {
			for id, m := range e.managers {
				t.Logf("----- last lines of manager %s -----\n%s", id, tail(m.Log(), 40))
				if dir := os.Getenv("WEBCHECKER_E2E_LOG_DIR"); dir != "" {
					_ = os.WriteFile(filepath.Join(dir, id+".log"), []byte(m.Log()), 0o644)
				}
			}
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		_ = c.DeleteAllOf(cctx, &webcheckerv1alpha1.WebChecker{}, client.InNamespace(quorumNamespace))
	})
	return e
}

func (e *quorumEnv) start(r quorumReplica) {
	e.t.Helper()
	args := []string{
		"--lease-namespace=" + quorumLeaseNamespace,
		"--ring-name=" + e.ringName,
		"--lease-duration=" + quorumLeaseDuration.String(),
		"--lease-renew-interval=1s",
		"--zone=" + r.zone,
		"--zap-time-encoding=rfc3339nano",
		"--zap-log-level=" + cmp.Or(os.Getenv("WEBCHECKER_E2E_LOG_LEVEL"), "info"),
	}
	if r.deny {
		// After framework.LoopbackAllowance, which it narrows: loopback
		// but 127.0.0.1 and ::1 is denied by default.
		args = append(args, "--allow-cidrs=127.0.0.1/32,::1/128", "--deny-cidrs="+quorumDeniedIP+"/32")
	}
	m, err := framework.StartManager(e.ctx, framework.ManagerOptions{
		Binary: managerPath, Kubeconfig: cp.KubeconfigPath, ShardID: r.id, DNSServer: dns.Addr(), Args: args,
	})
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		if !m.Exited() {
			_ = m.Kill()
		}
	})
	e.managers[r.id], e.zones[r.id] = m, r.zone
}

// waitLeases waits until n replicas hold a live Lease of the ring.
func (e *quorumEnv) waitLeases(n int, within time.Duration) {
	e.t.Helper()
	require.True(e.t, poll(within, 100*time.Millisecond, func() bool {
		var leases coordinationv1.LeaseList
		if e.c.List(e.ctx, &leases, client.InNamespace(quorumLeaseNamespace), client.MatchingLabels{membership.LabelRing: e.ringName}) != nil {
			return false
		}
		live, _ := membership.Live(leases.Items, time.Now())
		return len(live) == n
	}), "%d replicas on the ring", n)
}

// ring is the ring of the live replicas.
func (e *quorumEnv) ring() *ring.Ring {
	return ring.New(slices.Sorted(maps.Keys(e.zones)), ring.DefaultVirtualNodes)
}

// expectedSet is the shards that probe the checker name with k vantage
// points on the ring of the live replicas, in order.
func (e *quorumEnv) expectedSet(name string, k int) []string {
	set := e.ring().VantagePoints(ring.Key(quorumNamespace, name), k, func(m string) string { return e.zones[m] })
	return slices.Sorted(slices.Values(set))
}

// nameOwnedBy returns the first name prefix-<i> that shard owns.
func (e *quorumEnv) nameOwnedBy(prefix, shard string) string {
	r := e.ring()
	for i := 0; ; i++ {
		if name := fmt.Sprintf("%s-%d", prefix, i); r.Owner(ring.Key(quorumNamespace, name)) == shard {
			return name
		}
	}
}

func (e *quorumEnv) create(name, url string, vantagePoints int32) {
	e.t.Helper()
	e.createWith(name, url, vantagePoints, nil)
}

// createWith creates the checker name as create does, with its spec
// changed by mutate (when not nil) first.
func (e *quorumEnv) createWith(name, url string, vantagePoints int32, mutate func(*webcheckerv1alpha1.WebCheckerSpec)) {
	e.t.Helper()
	wc := &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: quorumNamespace, Name: name},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host: url, Path: "/" + name,
			Interval:      &metav1.Duration{Duration: quorumInterval},
			VantagePoints: ptr.To(vantagePoints),
		},
	}
	if mutate != nil {
		mutate(&wc.Spec)
	}
	require.NoError(e.t, e.c.Create(e.ctx, wc), "creating %s", name)
}

// createAll creates the checkers names concurrently.
func (e *quorumEnv) createAll(names []string, url string, vantagePoints int32) {
	var wg sync.WaitGroup
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for name := range work {
				e.create(name, url, vantagePoints)
			}
		})
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
}

func (e *quorumEnv) list() map[string]*webcheckerv1alpha1.WebChecker {
	e.t.Helper()
	var list webcheckerv1alpha1.WebCheckerList
	require.NoError(e.t, e.c.List(e.ctx, &list, client.InNamespace(quorumNamespace)))
	out := make(map[string]*webcheckerv1alpha1.WebChecker, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func (e *quorumEnv) resourceVersions() map[string]string {
	out := map[string]string{}
	for name, wc := range e.list() {
		out[name] = wc.ResourceVersion
	}
	return out
}

// waitFor polls the checkers until check returns "" (what is still wrong
// otherwise), and fails the test with the last complaint after within.
func (e *quorumEnv) waitFor(t *testing.T, what string, within time.Duration, check func(map[string]*webcheckerv1alpha1.WebChecker) string) {
	t.Helper()
	var complaint string
	// Every poll lists all the checkers: not so often that the API
	// server, which the replicas share, is busy serving the test.
	if !poll(within, 250*time.Millisecond, func() bool {
		complaint = check(e.list())
		return complaint == ""
	}) {
		require.Fail(t, what+" within "+within.String(), complaint)
	}
}

func shardsOf(entries []webcheckerv1alpha1.VantagePointStatus) []string {
	var shards []string
	for _, e := range entries {
		shards = append(shards, e.Shard)
	}
	slices.Sort(shards)
	return shards
}

// assertEntriesWrittenByTheirShards checks in managedFields that every
// entry of status.vantagePoints is managed by its own shard's field
// manager alone.
func assertEntriesWrittenByTheirShards(t *testing.T, wcs map[string]*webcheckerv1alpha1.WebChecker) {
	t.Helper()
	for name, wc := range wcs {
		owners, err := framework.EntryManagers(wc)
		require.NoError(t, err, name)
		for _, entry := range wc.Status.VantagePoints {
			assert.Equal(t, []string{controllers.VantageFieldManager(entry.Shard)}, owners[entry.Shard], "%s: managers of the entry of %s", name, entry.Shard)
		}
	}
}
