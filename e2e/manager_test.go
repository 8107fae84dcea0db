package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestManagerProcess runs the built manager against the control plane as a
// user that has nothing but the generated RBAC rules (config/rbac), applies
// the shipped samples and a local target with kubectl, and checks what a
// user sees with `kubectl get webcheckers`, then that SIGTERM stops it
// cleanly and releases its Lease.
func TestManagerProcess(t *testing.T) {
	const (
		ns             = "e2e-manager"
		leaseNamespace = "webchecker-system" // where config/rbac puts the Lease Role
		user           = "webchecker-manager"
	)
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	kubeconfig := generatedRBACUser(t, user, ns, leaseNamespace)

	target := probetest.NewTarget()
	defer target.Close()

	mgr, err := framework.StartManager(context.Background(), framework.ManagerOptions{
		Binary: managerPath, Kubeconfig: kubeconfig, ShardID: "e2e-0", DNSServer: dns.Addr(),
		Args: []string{"--lease-namespace=" + leaseNamespace},
	})
	require.NoError(t, err)
	defer func() {
		if !mgr.Exited() {
			_ = mgr.Kill()
		}
	}()

	_, err = cp.Kubectl("", "apply", "-n", ns, "-f", filepath.Join(root, "config", "samples", "test_v1alpha1_webchecker.yaml"))
	require.NoError(t, err)
	local := fmt.Sprintf(`{"apiVersion":"test.network.io/v1alpha1","kind":"WebChecker","metadata":{"name":"local"},"spec":{"host":%q,"path":"/ping","interval":"1s","timeout":"500ms"}}`, target.URL())
	_, err = cp.Kubectl(local, "apply", "-n", ns, "-f", "-")
	require.NoError(t, err)

	readyOf := func(name string) string {
		out, _ := cp.Kubectl("", "get", "wc", name, "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}`)
		return out
	}
	require.Eventually(t, func() bool { return readyOf("local") == "True/ProbeSucceeded" }, 10*time.Second, 100*time.Millisecond, "local: %s\n%s", readyOf("local"), mgr.Log())
	require.Eventually(t, func() bool { return readyOf("badnews") == "False/DNSFailed" }, 10*time.Second, 100*time.Millisecond, "badnews: %s", readyOf("badnews"))

	table, err := cp.Kubectl("", "get", "webcheckers", "-n", ns, "-o", "wide")
	require.NoError(t, err)
	t.Logf("kubectl get webcheckers -o wide:\n%s", table)
	header := strings.Fields(strings.SplitN(table, "\n", 2)[0])
	assert.Equal(t, []string{"NAME", "HOST", "PATH", "READY", "SUSPEND", "CODE", "REASON", "MAINTENANCE", "INTERVAL", "SHARD", "QUORUM", "MESSAGE", "CERT-EXPIRY", "AGE"}, header)
	assert.Regexp(t, `local\s+http://127\.0\.0\.1:\d+\s+/ping\s+True\s+false\s+200\s+ProbeSucceeded\s+1s\s+e2e-0\s+WebChecker is ready`, table)
	// No path in the sample, and no CRD default (the other kinds have
	// none): the column is empty, the probe requests /.
	assert.Regexp(t, `badnews\s+http://badnews\.me\s+False\s+false\s+DNSFailed\s+10s\s+e2e-0\s+Get "http://badnews.me/": dial tcp: lookup badnews.me`, table)

	events, err := cp.Kubectl("", "get", "events", "-n", ns, "--field-selector", "involvedObject.name=badnews", "-o", "jsonpath={.items[*].reason}")
	require.NoError(t, err)
	assert.Contains(t, events, "ProbeFailed")

	holder, err := cp.Kubectl("", "get", "lease", "e2e-0", "-n", leaseNamespace, "-o", "jsonpath={.spec.holderIdentity}")
	require.NoError(t, err)
	assert.Equal(t, "e2e-0", holder)
	assert.NotContains(t, mgr.Log(), "forbidden", "the generated RBAC rules do not cover what the manager does")

	// SIGTERM: a clean, prompt exit that releases the Lease, and no probe
	// after it.
	require.NoError(t, mgr.Terminate(15*time.Second), mgr.Log())
	_, err = cp.Kubectl("", "get", "lease", "e2e-0", "-n", leaseNamespace)
	assert.ErrorContains(t, err, "NotFound", "the Lease survived SIGTERM")
	stopped := len(target.Hits())
	time.Sleep(2 * time.Second)
	assert.Equal(t, stopped, len(target.Hits()), "the target was probed after the manager exited")
}

// generatedRBACUser creates the namespaces (when missing), applies the
// generated RBAC rules (config/rbac) and binds them, and nothing else, to a
// new user, whose kubeconfig it returns: the manager runs as that user to
// prove the rules suffice. The Lease Role is bound in leaseNamespace, the
// cluster networks' Role in default.
func generatedRBACUser(t *testing.T, user string, namespaces ...string) string {
	t.Helper()
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	leaseNamespace := namespaces[len(namespaces)-1]
	var steps [][]string
	for _, ns := range namespaces {
		if _, err := cp.Kubectl("", "get", "namespace", ns); err != nil {
			steps = append(steps, []string{"create", "namespace", ns})
		}
	}
	steps = append(steps,
		[]string{"apply", "-f", filepath.Join(root, "config", "rbac", "role.yaml")},
		[]string{"create", "clusterrolebinding", user, "--clusterrole=webchecker-manager", "--user=" + user},
		[]string{"create", "rolebinding", user, "-n", leaseNamespace, "--role=webchecker-manager", "--user=" + user},
		// The API server's EndpointSlices (the cluster networks).
		[]string{"create", "rolebinding", user, "-n", "default", "--role=webchecker-manager", "--user=" + user},
	)
	for _, args := range steps {
		_, err := cp.Kubectl("", args...)
		require.NoError(t, err)
	}
	kubeconfig, err := cp.UserKubeconfig(user)
	require.NoError(t, err)
	return kubeconfig
}
