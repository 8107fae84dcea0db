package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
)

// testClient returns a client of the shared control plane, with the
// namespace of the test's WebCheckers and the others (Leases, ...)
// created, and the WebCheckers deleted when the test ends (the namespaces
// stay: a later test may use them).
func testClient(t *testing.T, ctx context.Context, checkers string, others ...string) client.Client {
	t.Helper()
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	for _, ns := range append([]string{checkers}, others...) {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "creating namespace %s", ns)
		}
	}
	t.Cleanup(func() {
		_ = c.DeleteAllOf(context.Background(), &webcheckerv1alpha1.WebChecker{}, client.InNamespace(checkers))
	})
	return c
}

// startManager starts one built manager, shard id, alone on a ring of its
// own that serves only namespace ns (its Lease in leaseNS), with args
// after those flags (the last value of a flag wins). The process is killed
// when the test ends, and its log's tail is printed if the test failed.
func startManager(t *testing.T, ctx context.Context, id, ns, leaseNS string, args ...string) *framework.Manager {
	t.Helper()
	mgr, err := framework.StartManager(ctx, framework.ManagerOptions{
		Binary: managerPath, Kubeconfig: cp.KubeconfigPath, ShardID: id, DNSServer: dns.Addr(),
		Args: append([]string{
			"--lease-namespace=" + leaseNS,
			fmt.Sprintf("--ring-name=e2e-%s-%d", id, time.Now().UnixNano()),
			"--watch-namespaces=" + ns,
		}, args...),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if !mgr.Exited() {
			_ = mgr.Kill()
		}
		if t.Failed() {
			t.Logf("manager %s log:\n%s", id, tail(mgr.Log(), 60))
		}
	})
	return mgr
}

// createConcurrently creates a WebChecker named each of names in namespace
// ns, with the spec spec gives it, workers at a time; it returns every
// error, joined.
func createConcurrently(ctx context.Context, c client.Client, ns string, workers int, names []string, spec func(name string) webcheckerv1alpha1.WebCheckerSpec) error {
	var g errgroup.Group
	g.SetLimit(workers)
	var mu sync.Mutex
	var errs []error
	for _, name := range names {
		g.Go(func() error {
			wc := &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec(name)}
			if err := c.Create(ctx, wc); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("creating %s/%s: %w", ns, name, err))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}
