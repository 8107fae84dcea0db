package controllers_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
)

// setAllowance sets (or, with remove, removes) the egress allowance
// annotation of the Namespace ns.
func setAllowance(t *testing.T, ns, value string, remove bool) {
	t.Helper()
	var namespace corev1.Namespace
	require.NoError(t, k8sClient.Get(context.Background(), types.NamespacedName{Name: ns}, &namespace))
	patch := client.MergeFrom(namespace.DeepCopy())
	if remove {
		delete(namespace.Annotations, checkspec.EgressAllowAnnotation)
	} else {
		if namespace.Annotations == nil {
			namespace.Annotations = map[string]string{}
		}
		namespace.Annotations[checkspec.EgressAllowAnnotation] = value
	}
	require.NoError(t, k8sClient.Patch(context.Background(), &namespace, patch))
}

// TestNamespaceEgressAllowance: a cluster admin's annotation on a Namespace
// opens a denied address for that namespace's checkers only, and its
// changes (set, changed, invalid, removed) take effect without a restart.
func TestNamespaceEgressAllowance(t *testing.T) {
	t.Parallel()
	ns, other := newNamespace(t), newNamespace(t)
	var hits atomic.Int64
	ln, err := net.Listen("tcp", net.JoinHostPort(deniedAddr, "0"))
	require.NoError(t, err)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) })}}
	srv.Start()
	t.Cleanup(srv.Close)

	wc := newChecker(ns, "annotated", srv.URL, "/")
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	got := waitReady(t, key, metav1.ConditionFalse, "EgressDenied", secretTimeout)
	assert.Contains(t, ready(got).Message, "egress to 127.0.0.2 denied: denied range 127.0.0.2/32 (--deny-cidrs)")
	elsewhere := newChecker(other, "not-annotated", srv.URL, "/")
	require.NoError(t, k8sClient.Create(context.Background(), elsewhere))
	waitReady(t, client.ObjectKeyFromObject(elsewhere), metav1.ConditionFalse, "EgressDenied", secretTimeout)
	require.Zero(t, hits.Load())

	// Set: the namespace's checker reaches the address, the other's not.
	setAllowance(t, ns, "10.0.0.0/8, "+deniedAddr, false)
	waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", secretTimeout)
	assert.NotZero(t, hits.Load())

	// Changed to a range without the address: denied again.
	setAllowance(t, ns, "127.0.0.3", false)
	got = waitReady(t, key, metav1.ConditionFalse, "EgressDenied", secretTimeout)
	assert.Contains(t, ready(got).Message, "egress to 127.0.0.2 denied")

	// Invalid: not probed, and the message says why.
	setAllowance(t, ns, "127.0.0.2/33", false)
	want := `namespace ` + ns + `: annotation ` + checkspec.EgressAllowAnnotation + `: invalid address range "127.0.0.2/33": netip.ParsePrefix("127.0.0.2/33"): prefix length out of range`
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var wc webcheckerv1alpha1.WebChecker
		require.NoError(c, k8sClient.Get(context.Background(), key, &wc))
		assert.Equal(c, "EgressDenied", ready(&wc).Reason)
		assert.Equal(c, want, ready(&wc).Message)
	}, secretTimeout, 20*time.Millisecond)

	// Set again, then removed.
	setAllowance(t, ns, deniedAddr+"/32", false)
	waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", secretTimeout)
	setAllowance(t, ns, "", true)
	got = waitReady(t, key, metav1.ConditionFalse, "EgressDenied", secretTimeout)
	assert.Contains(t, ready(got).Message, "egress to 127.0.0.2 denied: denied range 127.0.0.2/32 (--deny-cidrs)")

	got = waitReady(t, client.ObjectKeyFromObject(elsewhere), metav1.ConditionFalse, "EgressDenied", secretTimeout)
	assert.Contains(t, ready(got).Message, "egress to 127.0.0.2 denied", "the other namespace was never allowed")
}
