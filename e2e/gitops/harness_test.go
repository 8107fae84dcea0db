package gitops

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/e2e/framework"
)

const (
	group      = "test.network.io"
	apiVersion = group + "/v1alpha1"
	kind       = "WebChecker"
)

// verdicts is what each tool says of one WebChecker.
type verdicts struct {
	kstatus, flux status.Status
	argo          string
}

// fixture is a namespace served by a built manager of its own, a client,
// and the shipped health checks, loaded from config/gitops.
type fixture struct {
	ns   string
	c    client.Client
	flux FluxCheck
	argo string
}

// newFixture creates a namespace named after prefix (new on every run of
// the test) and starts a manager that serves it (its Lease there too); the
// manager is killed when the test ends, and its log printed if the test
// failed.
func newFixture(t *testing.T, prefix string) *fixture {
	t.Helper()
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	f := &fixture{ns: ns}
	f.flux, err = LoadFluxCheck(filepath.Join(root, "config", "gitops", "flux-kustomization.yaml"), apiVersion, kind)
	require.NoError(t, err)
	f.argo, err = LoadArgoHealthScript(filepath.Join(root, "config", "gitops", "argocd-cm.yaml"), group, kind)
	require.NoError(t, err)
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	f.c, err = client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	require.NoError(t, f.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	mgr, err := framework.StartManager(context.Background(), framework.ManagerOptions{
		Binary: managerPath, Kubeconfig: cp.KubeconfigPath, ShardID: ns + "-0", DNSServer: dns.Addr(),
		Args: []string{"--lease-namespace=" + ns, "--ring-name=" + ns, "--watch-namespaces=" + ns},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if !mgr.Exited() {
			_ = mgr.Kill()
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", mgr.Log())
		}
	})
	return f
}

// judge is what kstatus, Flux (with the shipped expressions) and Argo CD
// (with the shipped Lua) say of u.
func (f *fixture) judge(t *testing.T, u *unstructured.Unstructured) verdicts {
	t.Helper()
	ks, err := status.Compute(u)
	require.NoError(t, err, "kstatus")
	flux, err := f.flux.Status(context.Background(), u)
	require.NoError(t, err, "Flux")
	argo, err := RunArgoHealth(context.Background(), f.argo, u)
	require.NoError(t, err, "Argo CD")
	assert.NotEmpty(t, argo.Message, "Argo CD's message")
	return verdicts{kstatus: ks.Status, flux: flux, argo: argo.Status}
}

// checker is a WebChecker named name in ns with spec, as a user applies it.
func checker(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

// get reads the WebChecker ns/name as the tools see it.
func get(ctx context.Context, c client.Client, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

// condition returns the status and reason of the condition of type typ
// of u, "" when it has none.
func condition(u *unstructured.Unstructured, typ string) (status, reason string) {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}

// readyIs reports whether an object's Ready condition has status and
// reason.
func readyIs(status, reason string) func(u *unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		s, r := condition(u, "Ready")
		return s == status && r == reason
	}
}

// waitFor polls the WebChecker name until reached says so, for at most
// 30 s, and returns it.
func (f *fixture) waitFor(t *testing.T, name string, reached func(u *unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last any
	for time.Now().Before(deadline) {
		u, err := get(context.Background(), f.c, f.ns, name)
		if err == nil && reached(u) {
			return u
		}
		if err == nil {
			last = u.Object["status"]
		}
		<-tick.C
	}
	t.Fatalf("%s/%s never reached the state within 30s; last status: %v", f.ns, name, last)
	return nil
}

// holds checks, every 100 ms for d, that the tools' verdicts of the
// WebChecker name are want, and returns it as last read.
func (f *fixture) holds(t *testing.T, name string, want verdicts, d time.Duration) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		u, err := get(context.Background(), f.c, f.ns, name)
		require.NoError(t, err)
		require.Equal(t, want, f.judge(t, u), "%s/%s; status: %v", f.ns, name, u.Object["status"])
		if time.Now().After(deadline) {
			return u
		}
		<-tick.C
	}
}
