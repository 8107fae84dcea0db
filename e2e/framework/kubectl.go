package framework

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// KubectlPath returns the kubectl built by `make tools`, found beside
// kube-apiserver.
func KubectlPath() (string, error) {
	dir, err := toolsDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no kubectl in %s: run `make tools` first: %w", dir, err)
	}
	return bin, nil
}

// Kubectl runs kubectl against the control plane as its admin with stdin as
// input and returns its standard output.
func (cp *ControlPlane) Kubectl(stdin string, args ...string) (string, error) {
	return KubectlAs(cp.KubeconfigPath, stdin, args...)
}

// KubectlAs runs kubectl with the given kubeconfig (and so as its user)
// with stdin as input and returns its standard output.
func KubectlAs(kubeconfig, stdin string, args ...string) (string, error) {
	bin, err := KubectlPath()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// KubectlFor returns a kubectl runner on cp, as its admin, that fails the
// test when a command fails and returns the command's output otherwise.
func KubectlFor(t testing.TB, cp *ControlPlane) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := cp.Kubectl("", args...)
		require.NoError(t, err, "kubectl %v", args)
		return out
	}
}
