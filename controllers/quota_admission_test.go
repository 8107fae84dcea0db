package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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

	// The admission reads quotas from its own cache: until it has seen
	// this one (and its status), creates are admitted uncounted, or
	// refused as of an unknown status. So create until the quota refuses,
	// within a deadline: at least hard checkers must have been admitted.
	created, attempt := 0, 0
	var err error
	require.Eventually(t, func() bool {
		attempt++
		err = k8sClient.Create(ctx, newChecker(ns, fmt.Sprintf("checker-%d", attempt), "http://example.com", "/"))
		if err == nil {
			created++
			return false
		}
		return strings.Contains(err.Error(), "exceeded quota")
	}, 30*time.Second, 50*time.Millisecond, "no create was refused by the quota (last error: %v)", err)
	assert.GreaterOrEqual(t, created, hard, "the quota refused a checker within it")
	assert.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	assert.Contains(t, err.Error(), "exceeded quota: webcheckers")
	assert.Contains(t, err.Error(), "limited: "+string(checkerQuota)+"=3")
	t.Logf("refused: %v", err)
}
