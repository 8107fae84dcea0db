package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RepoRoot returns the repository root: the nearest parent of the working
// directory that holds the project's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding repository root: %w", err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isProjectModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding repository root: no go.mod of github.com/networkio/webchecker above the working directory")
		}
		dir = parent
	}
}

func isProjectModule(gomod []byte) bool {
	const want = "module github.com/networkio/webchecker\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}

// toolsDir is where the control-plane binaries are: $KUBEBUILDER_ASSETS,
// else <repo>/bin/k8s (built by the Makefile).
func toolsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "k8s"), nil
}

// ControlPlane is a running kube-apiserver and etcd with the WebChecker CRD
// installed.
type ControlPlane struct {
	env *envtest.Environment
	// Config is an admin rest.Config for the API server.
	Config *rest.Config
	// KubeconfigPath is an admin kubeconfig file for kubectl and manager
	// processes.
	KubeconfigPath string
	dir            string
	stopReaper     func()
}

// StartControlPlane starts a control plane from the binaries in
// $KUBEBUILDER_ASSETS (else <repo>/bin/k8s, built by `make tools`) and
// installs the CRDs from <repo>/config/crd/bases.
func StartControlPlane() (*ControlPlane, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return startControlPlane(filepath.Join(root, "config", "crd", "bases"))
}

// StartEmptyControlPlane starts a control plane like StartControlPlane but
// installs no CRD: a fresh cluster, as a Helm chart finds it.
func StartEmptyControlPlane() (*ControlPlane, error) {
	return startControlPlane()
}

func startControlPlane(crdDirs ...string) (*ControlPlane, error) {
	assets, err := toolsDir()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in %s: run `make tools` (or `make test`) first: %w", assets, err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        crdDirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	cfg, err := env.Start()
	if err != nil {
		// Start may fail after it started etcd and the API server (a CRD
		// they refuse): stop whatever runs, so that no process outlives
		// the test.
		_ = env.Stop()
		return nil, fmt.Errorf("starting control plane: %w", err)
	}
	cp := &ControlPlane{env: env, Config: cfg, stopReaper: func() {}}
	if cp.stopReaper, err = startReaper(); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if cp.dir, err = os.MkdirTemp("", "webchecker-controlplane-"); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating kubeconfig directory: %w", err)
	}
	cp.KubeconfigPath = filepath.Join(cp.dir, "kubeconfig")
	if err := os.WriteFile(cp.KubeconfigPath, env.KubeConfig, 0o600); err != nil {
		_ = cp.Stop()
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	return cp, nil
}

// Stop stops the API server and etcd and removes their data.
func (cp *ControlPlane) Stop() error {
	err := cp.env.Stop()
	cp.stopReaper()
	if cp.dir != "" {
		err = errors.Join(err, os.RemoveAll(cp.dir))
	}
	if err != nil {
		return fmt.Errorf("stopping control plane: %w", err)
	}
	return nil
}

// RunWithControlPlane is the body of a TestMain: it starts a control plane,
// calls run with it (run calls m.Run), stops it and returns the exit code.
func RunWithControlPlane(run func(cp *ControlPlane) int) int {
	cp, err := StartControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	return run(cp)
}

// UserKubeconfig writes a kubeconfig for a user in the given groups (no
// group: the user may do only what RBAC bindings grant it) and returns its
// path. It is how tests check that the generated RBAC rules suffice.
func (cp *ControlPlane) UserKubeconfig(name string, groups ...string) (string, error) {
	user, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("kubeconfig of user %s: %w", name, err)
	}
	path := filepath.Join(cp.dir, "kubeconfig-"+name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing kubeconfig of user %s: %w", name, err)
	}
	return path, nil
}

// serviceAccountTokenLifetime is how long ServiceAccountKubeconfig's tokens
// are valid.
const serviceAccountTokenLifetime = 24 * time.Hour

// ServiceAccountKubeconfig requests a token for the ServiceAccount
// namespace/name from the TokenRequest API and writes a kubeconfig that
// authenticates with it: the identity a pod running as that ServiceAccount
// has. It returns the kubeconfig's path and the token, which is valid for
// serviceAccountTokenLifetime: a pod's token is renewed by its kubelet,
// these are not, and a bench's replicas use theirs for hours.
func (cp *ControlPlane) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (path, token string, err error) {
	clientset, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return "", "", fmt.Errorf("creating clientset: %w", err)
	}
	expiry := int64(serviceAccountTokenLifetime / time.Second)
	req, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData}
	config.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: req.Status.Token}
	config.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	config.CurrentContext = "default"
	path = filepath.Join(cp.dir, "kubeconfig-sa-"+namespace+"-"+name)
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return "", "", fmt.Errorf("writing kubeconfig of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return path, req.Status.Token, nil
}
