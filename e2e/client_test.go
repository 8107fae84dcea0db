package e2e_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
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
