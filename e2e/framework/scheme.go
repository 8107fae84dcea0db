package framework

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// NewScheme returns a scheme for the tests' clients: the built-in
// Kubernetes types and WebChecker.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	if err := webcheckerv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	return scheme, nil
}
