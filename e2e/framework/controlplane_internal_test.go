package framework

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/bench/procstat"
)

// brokenCRD is a CRD the API server refuses: its CEL rule does not parse.
const brokenCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: brokens.test.example.com}
spec:
  group: test.example.com
  names: {kind: Broken, listKind: BrokenList, plural: brokens, singular: broken}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: "self.("
`

// TestFailedStartLeavesNoProcess: a control plane whose CRDs the API
// server refuses fails to start, and leaves neither its API server nor
// its etcd running (envtest had started both when the CRD was refused).
func TestFailedStartLeavesNoProcess(t *testing.T) {
	assets, err := toolsDir()
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(assets, "kube-apiserver"))
	require.NoError(t, err, "the control plane's tools are built by make tools")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(brokenCRD), 0o600))

	cp, err := startControlPlane(dir)
	if cp != nil {
		_ = cp.Stop()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "starting control plane")
	for _, comm := range []string{"kube-apiserver", "etcd"} {
		_, err := procstat.FindChild(procstat.Self, comm)
		assert.Error(t, err, "a %s outlived the failed start", comm)
	}
}
