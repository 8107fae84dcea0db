package controllers_test

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing"
)

// probeLog is a prober that probes nothing: it records the URLs it was
// asked to probe and reports success.
type probeLog struct {
	mu     sync.Mutex
	counts map[string]int
}

func (p *probeLog) Probe(_ context.Context, t probing.Target) probing.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[t.URL()]++
	return probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}
}

func (p *probeLog) count(url string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[url]
}

func setNamespaceLabel(t *testing.T, ns, value string) {
	t.Helper()
	obj := &corev1.Namespace{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Name: ns}, obj))
	patch := client.MergeFrom(obj.DeepCopy())
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	if value == "" {
		delete(obj.Labels, "webchecker.test/scope")
	} else {
		obj.Labels["webchecker.test/scope"] = value
	}
	require.NoError(t, k8sClient.Patch(context.Background(), obj, patch))
}

// TestNamespaceScope runs a second replica (a ring of its own, on a fake
// clock) that serves two watched namespaces, and of those only the ones
// labelled webchecker.test/scope=on: a namespace that gains the label is
// probed at once, one that loses it is no longer scheduled nor probed.
func TestNamespaceScope(t *testing.T) {
	t.Parallel()
	selected, unlabelled, unwatched := newNamespace(t), newNamespace(t), newNamespace(t)
	setNamespaceLabel(t, selected, "on")
	setNamespaceLabel(t, unwatched, "on")

	probes := &probeLog{counts: map[string]int{}}
	selector := labels.SelectorFromSet(labels.Set{"webchecker.test/scope": "on"})
	scope := controllers.WatchScope{Namespaces: []string{selected, unlabelled}, NamespaceSelector: selector}
	mgr := sideManager(t, k8sConfig, &scope)
	clk := clocktesting.NewFakeClock(t0)
	sched, err := setupReplica(mgr, replicaConfig{
		shardID:    "scoped-replica",
		prober:     probes,
		scope:      scope,
		logger:     ctrl.Log.WithName("scoped"),
		registerer: prometheus.NewRegistry(), // a second replica in this process
		clock:      clk,
	})
	require.NoError(t, err)
	framework.RunInTest(t, mgr)

	// Nothing listens on port 1: the suite's replica, which serves every
	// namespace, fails quickly on these; the scoped one only records them.
	urls := map[string]string{}
	for _, ns := range []string{selected, unlabelled, unwatched} {
		wc := newChecker(ns, "scoped", "http://127.0.0.1:1", "/"+ns)
		require.NoError(t, k8sClient.Create(context.Background(), wc))
		urls[ns] = "http://127.0.0.1:1/" + ns
	}
	// step moves the clock to the next grid point and waits for the probe
	// of the namespace ns due then.
	step := func(ns string) {
		t.Helper()
		n := probes.count(urls[ns])
		clk.Step(interval)
		require.Eventually(t, func() bool { return probes.count(urls[ns]) > n }, waitFor, poll, "%s is not served", ns)
	}

	require.Eventually(t, func() bool { return probes.count(urls[selected]) == 1 }, waitFor, poll, "the selected namespace is not served")
	step(selected)
	step(selected)
	assert.Equal(t, 1, sched.Len(), "only the selected namespace's checker is scheduled")
	assert.Zero(t, probes.count(urls[unlabelled]), "a namespace without the label was served")
	assert.Zero(t, probes.count(urls[unwatched]), "a namespace outside --watch-namespaces was served")

	// The label arrives: served at once; it leaves: no longer scheduled,
	// and not probed at the next grid points, where the other one is.
	setNamespaceLabel(t, unlabelled, "on")
	require.Eventually(t, func() bool { return probes.count(urls[unlabelled]) >= 1 }, waitFor, poll, "a newly labelled namespace is not served")
	setNamespaceLabel(t, selected, "off")
	require.Eventually(t, func() bool { return sched.Len() == 1 }, waitFor, poll, "a namespace that lost the label is still scheduled")
	before := probes.count(urls[selected])
	step(unlabelled)
	step(unlabelled)
	assert.Equal(t, before, probes.count(urls[selected]), "a namespace that lost the label is still served")
	assert.Zero(t, probes.count(urls[unwatched]))
}

// TestSecretSelector checks that a cache built with a Secret selector holds
// only the matching Secrets, and that a checker using another one is told
// why it is not found.
func TestSecretSelector(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	selector := labels.SelectorFromSet(labels.Set{"webchecker.test/probe": "true"})
	scope := controllers.WatchScope{Namespaces: []string{ns}, SecretSelector: selector}
	c, err := cache.New(k8sConfig, scope.ApplyTo(cache.Options{Scheme: k8sClient.Scheme()}))
	require.NoError(t, err)
	framework.RunInTest(t, c)

	labelled := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "labelled", Labels: map[string]string{"webchecker.test/probe": "true"}},
		Data:       map[string][]byte{"token": []byte("t0k")},
	}
	require.NoError(t, k8sClient.Create(context.Background(), labelled))
	putSecret(t, ns, "unlabelled", map[string]string{"token": "t0k"})

	wc := newChecker(ns, "selector", "https://example.com", "/")
	wc.Spec.BearerTokenSecretRef = secretKey("labelled", "token")
	secrets := checkspec.SecretReader(t.Context(), c, ns, selector)
	require.Eventually(t, func() bool {
		check, err := checkspec.CheckFor(wc, secrets)
		return err == nil && check.Target.Spec().BearerToken == "t0k"
	}, secretTimeout, poll, "the labelled Secret never showed in the cache")

	wc.Spec.BearerTokenSecretRef = secretKey("unlabelled", "token")
	_, err = checkspec.CheckFor(wc, secrets)
	var secretErr *checkspec.SecretError
	require.ErrorAs(t, err, &secretErr)
	assert.Equal(t, probing.ReasonSecretUnavailable, secretErr.Reason)
	assert.Equal(t, `spec.bearerTokenSecretRef: Secret "unlabelled" not found among the Secrets labelled webchecker.test/probe=true`, secretErr.Message)
}

// TestCacheNeverHoldsHelmReleases checks that a cache built with any scope
// leaves out Helm's release Secrets (large, and of no use to a checker),
// and that a checker referring to one is told why it is not found.
func TestCacheNeverHoldsHelmReleases(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	scope := controllers.WatchScope{Namespaces: []string{ns}}
	c, err := cache.New(k8sConfig, scope.ApplyTo(cache.Options{Scheme: k8sClient.Scheme()}))
	require.NoError(t, err)
	framework.RunInTest(t, c)

	const release = "sh.helm.release.v1.shop.v1"
	require.NoError(t, k8sClient.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: release},
		Type:       "helm.sh/release.v1",
		Data:       map[string][]byte{"release": []byte("H4sI...")},
	}))
	putSecret(t, ns, "plain", map[string]string{"token": "t0k"})

	wc := newChecker(ns, "helm", "https://example.com", "/")
	wc.Spec.BearerTokenSecretRef = secretKey("plain", "token")
	secrets := checkspec.SecretReader(t.Context(), c, ns, nil)
	require.Eventually(t, func() bool {
		check, err := checkspec.CheckFor(wc, secrets)
		return err == nil && check.Target.Spec().BearerToken == "t0k"
	}, secretTimeout, poll, "the Opaque Secret never showed in the cache")

	var cached corev1.SecretList
	require.NoError(t, c.List(context.Background(), &cached, client.InNamespace(ns)))
	names := []string{}
	for _, s := range cached.Items {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"plain"}, names)

	wc.Spec.BearerTokenSecretRef = secretKey(release, "release")
	_, err = checkspec.CheckFor(wc, secrets)
	var secretErr *checkspec.SecretError
	require.ErrorAs(t, err, &secretErr)
	assert.Equal(t, `spec.bearerTokenSecretRef: Secret "sh.helm.release.v1.shop.v1" not found (Helm's release records are never read)`, secretErr.Message)
}
