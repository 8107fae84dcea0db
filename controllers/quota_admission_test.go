package controllers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkerQuota is the object count quota of WebCheckers the README shows.
const checkerQuota corev1.ResourceName = "count/webcheckers.test.network.io"

// TestResourceQuotaBoundsCheckersPerNamespace: the API server's quota
// admission refuses a WebChecker beyond a namespace's
// count/webcheckers.test.network.io. The test control plane runs no
// kube-controller-manager, so the test sets the quota's status (hard, and
// used at 0) as its quota controller would; the admission then counts the
// creates itself.
func TestResourceQuotaBoundsCheckersPerNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newElsewhereNamespace(t) // nobody probes these checkers
	const hard = 3
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webcheckers"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{checkerQuota: resource.MustParse(fmt.Sprint(hard))}},
	}
	require.NoError(t, k8sClient.Create(ctx, quota))
	quota.Status = corev1.ResourceQuotaStatus{
		Hard: quota.Spec.Hard,
		Used: corev1.ResourceList{checkerQuota: resource.MustParse("0")},
	}
	require.NoError(t, k8sClient.Status().Update(ctx, quota))

	for i := range hard {
		require.NoError(t, k8sClient.Create(ctx, newChecker(ns, fmt.Sprintf("within-%d", i), "http://example.com", "/")), "checker %d of %d", i+1, hard)
	}
	err := k8sClient.Create(ctx, newChecker(ns, "beyond", "http://example.com", "/"))
	require.Error(t, err, "a checker beyond the quota was created")
	assert.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	assert.Contains(t, err.Error(), "exceeded quota: webcheckers")
	assert.Contains(t, err.Error(), "limited: "+string(checkerQuota)+"=3")
	t.Logf("refused: %v", err)
}
