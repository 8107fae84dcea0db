package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"helm.sh/helm/v3/pkg/action"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/networkio/webchecker/e2e/framework"
)

// KubeVersion is the Kubernetes version the control plane runs; charts are
// rendered for it.
const KubeVersion = "v1.37.2"

// Dir returns the project's Helm chart directory, <repo>/charts/webchecker.
func Dir() (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "webchecker"), nil
}

// Load loads the project's Helm chart from Dir.
func Load() (*helmchart.Chart, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart: %w", err)
	}
	return ch, nil
}

// Lint lints the chart as `helm lint --strict` does (the same Helm code, so
// make test needs no helm binary): it returns every message, and an error
// that lists those that fail a strict lint (warnings and worse).
func Lint(namespace string, values map[string]any) ([]string, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	kubeVersion, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("parsing kube version: %w", err)
	}
	lint := action.NewLint()
	lint.Strict = true
	lint.Namespace = namespace
	lint.KubeVersion = kubeVersion
	result := lint.Run([]string{dir}, values)
	var messages []string
	for _, m := range result.Messages {
		messages = append(messages, m.Error())
	}
	if len(result.Errors) > 0 {
		return messages, fmt.Errorf("helm lint --strict failed: %w", errors.Join(result.Errors...))
	}
	return messages, nil
}

// Render renders ch as `helm template` does (no cluster; values checked
// against values.schema.json) for a release name in namespace and returns
// the rendered objects.
func Render(ch *helmchart.Chart, name, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = name, namespace
	kubeVersion, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("parsing Kubernetes version: %w", err)
	}
	install.KubeVersion = kubeVersion
	rel, err := install.Run(ch, values)
	if err != nil {
		return nil, fmt.Errorf("rendering chart: %w", err)
	}
	return DecodeManifest(rel.Manifest)
}

// DecodeManifest splits a multi-document YAML manifest (a release's
// manifest) into objects, skipping empty documents.
func DecodeManifest(manifest string) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding manifest: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// ActionConfig returns a Helm action configuration for releases in
// namespace of the control plane cp, acting as its admin and storing
// releases in Secrets as the helm CLI does. Helm's cache goes beside the
// admin kubeconfig, into the directory cp.Stop removes.
func ActionConfig(cp *framework.ControlPlane, namespace string) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	cacheDir := filepath.Join(filepath.Dir(cp.KubeconfigPath), "helm-cache")
	flags.KubeConfig, flags.Namespace, flags.CacheDir = &cp.KubeconfigPath, &namespace, &cacheDir
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("initialising helm: %w", err)
	}
	return cfg, nil
}
