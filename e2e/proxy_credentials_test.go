package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestManagerProxyCredentialsFromFiles runs the built manager with the
// operator-wide proxy's credentials in --proxy-credentials-dir (the files
// of a mounted kubernetes.io/basic-auth Secret): its checker probes
// through a loopback proxy that demands them, and neither the process's
// command line (/proc/<pid>/cmdline, /debug/pprof/cmdline) nor its log
// holds the password. A manager given the credentials in --proxy-url does
// not start, and says which flag to use without quoting the password.
func TestManagerProxyCredentialsFromFiles(t *testing.T) {
	const (
		ns       = "e2e-proxy-credentials"
		leaseNS  = "e2e-proxy-credentials-leases"
		password = "pr0xy-pa55word"
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := testClient(t, ctx, ns, leaseNS)
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{Username: "probe", Password: password})
	target := probetest.NewTarget()
	defer target.Close()
	credentials := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(credentials, "username"), []byte("probe"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(credentials, "password"), []byte(password+"\n"), 0o600))
	pprofAddr, err := framework.FreeLoopbackAddr()
	require.NoError(t, err)

	mgr := startManager(t, ctx, "proxy-credentials-0", ns, leaseNS,
		"--proxy-url="+proxy.URL(), "--proxy-credentials-dir="+credentials, "--pprof-bind-address="+pprofAddr)

	require.NoError(t, c.Create(ctx, &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "through-proxy"},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host: target.URL(), Path: "/via-proxy",
			Interval: &metav1.Duration{Duration: time.Second}, Timeout: &metav1.Duration{Duration: 900 * time.Millisecond},
		},
	}))
	awaitReady(t, ctx, c, ns, "through-proxy", metav1.ConditionTrue, "ProbeSucceeded", 20*time.Second)
	assert.Contains(t, proxy.ForwardedURLs(), target.URL()+"/via-proxy", "the probe went through the proxy, which demands the credentials")

	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", mgr.Pid()))
	require.NoError(t, err)
	assert.Contains(t, string(cmdline), "--proxy-credentials-dir="+credentials)
	assert.NotContains(t, string(cmdline), password, "/proc/<pid>/cmdline")
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/cmdline")
	require.NoError(t, err)
	served, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(served), "--proxy-url="+proxy.URL())
	assert.NotContains(t, string(served), password, "/debug/pprof/cmdline")
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", mgr.Pid()))
	require.NoError(t, err)
	assert.NotContains(t, string(environ), password, "/proc/<pid>/environ")
	assert.NotContains(t, mgr.Log(), password, "the manager's log")
	require.NoError(t, mgr.Terminate(15*time.Second), mgr.Log())

	// The credentials in --proxy-url: refused before anything starts.
	refusedCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	withURL := strings.Replace(proxy.URL(), "://", "://probe:"+password+"@", 1)
	out, err := exec.CommandContext(refusedCtx, managerPath, "--kubeconfig="+cp.KubeconfigPath, "--dns-server="+dns.Addr(),
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--proxy-url="+withURL).CombinedOutput()
	require.Error(t, err, "the manager started with credentials on its command line:\n%s", out)
	assert.Contains(t, string(out), "--proxy-url must not hold credentials")
	assert.Contains(t, string(out), "--proxy-credentials-dir")
	assert.NotContains(t, string(out), password, "the error quotes the password")
}
