package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/probetest"
)

// createDependent creates the checker name of ns probing target, depending
// on dependsOn.
func createDependent(t *testing.T, ns, name string, target *probetest.Target, dependsOn ...string) client.ObjectKey {
	t.Helper()
	wc := newChecker(ns, name, target.URL(), "/"+name)
	wc.Spec.DependsOn = dependsOn
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	return client.ObjectKeyFromObject(wc)
}

// TestDependentOfADownCheckerSaysSo follows a checker that depends on a
// router: while both fail, its Ready reason is DependencyDown, naming the
// router, its own failure in the message, and webchecker_dependency_down
// is 1; once the router is back, its own failure class returns and the
// series goes.
func TestDependentOfADownCheckerSaysSo(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	router, shop := probetest.NewTarget(), probetest.NewTarget()
	t.Cleanup(router.Close)
	t.Cleanup(shop.Close)
	router.SetStatus(http.StatusBadGateway)
	shop.SetStatus(http.StatusServiceUnavailable)
	routerKey := createDependent(t, ns, "router", router)
	shopKey := createDependent(t, ns, "shop", shop, "router")

	waitReady(t, routerKey, metav1.ConditionFalse, "UnexpectedStatus", waitFor)
	down := waitReady(t, shopKey, metav1.ConditionFalse, webcheckerv1alpha1.ReasonDependencyDown, waitFor)
	assert.Equal(t, "Dependency router is down (UnexpectedStatus); this checker: UnexpectedStatus: "+ready(getChecker(t, shopKey)).Message[strings.Index(ready(down).Message, "UnexpectedStatus: ")+len("UnexpectedStatus: "):], ready(down).Message)
	assert.Contains(t, ready(down).Message, "503")
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual(map[string]float64{"": 1}, checkerSeries(t, "webchecker_dependency_down", shopKey))
	}, waitFor, poll, "webchecker_dependency_down of the dependent")
	assert.Empty(t, checkerSeries(t, "webchecker_dependency_down", routerKey), "the router itself has no dependency down")

	router.SetStatus(http.StatusOK)
	waitReady(t, routerKey, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	own := waitReady(t, shopKey, metav1.ConditionFalse, "UnexpectedStatus", waitFor)
	assert.NotContains(t, ready(own).Message, "Dependency")
	require.Eventually(t, func() bool { return len(checkerSeries(t, "webchecker_dependency_down", shopKey)) == 0 }, waitFor, poll)

	shop.SetStatus(http.StatusOK)
	waitReady(t, shopKey, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
}

// TestDependentThatIsUpIgnoresItsDependency checks that a dependency that
// is down changes nothing for a dependent whose own probes succeed.
func TestDependentThatIsUpIgnoresItsDependency(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	router, shop := probetest.NewTarget(), probetest.NewTarget()
	t.Cleanup(router.Close)
	t.Cleanup(shop.Close)
	router.SetStatus(http.StatusBadGateway)
	routerKey := createDependent(t, ns, "router", router)
	shopKey := createDependent(t, ns, "shop", shop, "router")
	waitReady(t, routerKey, metav1.ConditionFalse, "UnexpectedStatus", waitFor)
	waitReady(t, shopKey, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
}

// TestInvalidDependencies checks a missing dependency and a cycle: Ready
// False with reason InvalidDependency naming them, and no probe; the
// missing one created, the dependent is probed; the cycle broken, both are.
func TestInvalidDependencies(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	target := probetest.NewTarget()
	t.Cleanup(target.Close)

	orphan := createDependent(t, ns, "orphan", target, "gateway")
	got := waitReady(t, orphan, metav1.ConditionFalse, webcheckerv1alpha1.ReasonInvalidDependency, waitFor)
	assert.Equal(t, fmt.Sprintf("spec.dependsOn: WebChecker gateway not found in namespace %s", ns), ready(got).Message)
	assert.Zero(t, target.Count("/orphan"), "a checker with a missing dependency was probed")
	createDependent(t, ns, "gateway", target)
	waitReady(t, orphan, metav1.ConditionTrue, "ProbeSucceeded", waitFor)

	a := createDependent(t, ns, "a", target, "b")
	b := createDependent(t, ns, "b", target, "c")
	c := createDependent(t, ns, "c", target, "a", "gateway")
	for key, cycle := range map[client.ObjectKey]string{a: "a -> b -> c -> a", b: "b -> c -> a -> b", c: "c -> a -> b -> c"} {
		// b names c as missing until c exists.
		want := "spec.dependsOn: " + cycle + " is a cycle"
		require.Eventually(t, func() bool {
			r := ready(getChecker(t, key))
			return r.Reason == webcheckerv1alpha1.ReasonInvalidDependency && r.Message == want
		}, waitFor, poll, "%s: %+v", key.Name, ready(getChecker(t, key)))
	}
	// Until the cycle closed, a and b were valid, and probed: from now on
	// none of the three is.
	counts := func() string {
		return fmt.Sprint(target.Count("/a"), target.Count("/b"), target.Count("/c"))
	}
	before := counts()
	assert.Never(t, func() bool { return counts() != before }, 3*interval, poll, "a checker in a cycle was probed")
	// Broken: c depends on the gateway alone.
	wc := getChecker(t, c)
	patch := client.MergeFrom(wc.DeepCopy())
	wc.Spec.DependsOn = []string{"gateway"}
	require.NoError(t, k8sClient.Patch(context.Background(), wc, patch))
	for _, key := range []client.ObjectKey{a, b, c} {
		waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	}
}

// TestDependsOnAdmission checks spec.dependsOn at admission.
func TestDependsOnAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	for name, tc := range map[string]struct {
		dependsOn []string
		wantErr   string
	}{
		"two names":       {dependsOn: []string{"router", "idp"}},
		"itself":          {dependsOn: []string{"router", "self"}, wantErr: "a checker cannot depend on itself"},
		"nine names":      {dependsOn: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, wantErr: "must have at most 8 items"},
		"a name twice":    {dependsOn: []string{"router", "router"}, wantErr: "Duplicate value"},
		"not a name":      {dependsOn: []string{"Router!"}, wantErr: "spec.dependsOn[0]"},
		"a name too long": {dependsOn: []string{strings.Repeat("a", 254)}, wantErr: "spec.dependsOn[0]"},
	} {
		t.Run(name, func(t *testing.T) {
			wc := newChecker(ns, "self", "example.com", "/")
			wc.Spec.DependsOn = tc.dependsOn
			err := k8sClient.Create(context.Background(), wc, client.DryRunAll)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
