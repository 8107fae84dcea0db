package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/sharding"
)

func TestStripUnread(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        map[string]string
	}{
		"last-applied only":  {map[string]string{lastAppliedAnnotation: "{}"}, nil},
		"others kept":        {map[string]string{lastAppliedAnnotation: "{}", "team": "a"}, map[string]string{"team": "a"}},
		"no last-applied":    {map[string]string{"team": "a"}, map[string]string{"team": "a"}},
		"no annotations":     {nil, nil},
		"empty last-applied": {map[string]string{lastAppliedAnnotation: ""}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			wc := &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{
				Name: "a", Annotations: tc.annotations,
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			}}
			out, err := stripUnread()(wc)
			require.NoError(t, err)
			got := out.(*webcheckerv1alpha1.WebChecker)
			assert.Nil(t, got.ManagedFields)
			assert.Equal(t, tc.want, got.Annotations)
			assert.Equal(t, "a", got.Name)
		})
	}
	// What the informer may hand over besides objects passes unchanged.
	out, err := stripUnread()("not an object")
	require.NoError(t, err)
	assert.Equal(t, "not an object", out)
}

// The strings that repeat across checkers are shared between the cached
// copies, within the pool's bounds; the values stay what they were.
func TestStripUnreadSharesRepeatedStrings(t *testing.T) {
	transform := stripUnread()
	decoded := func(name, message string) *webcheckerv1alpha1.WebChecker {
		// Strings built at run time, as a decoder makes them: distinct
		// copies of equal values.
		wc := &webcheckerv1alpha1.WebChecker{
			TypeMeta:   metav1.TypeMeta{APIVersion: strings.Clone("test.network.io/v1alpha1"), Kind: strings.Clone("WebChecker")},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: strings.Clone("team-a")},
			Spec: webcheckerv1alpha1.WebCheckerSpec{Host: strings.Clone("https://api.example.com"), Method: strings.Clone("GET"),
				IPFamily: webcheckerv1alpha1.IPFamily(strings.Clone("Any"))},
			Status: webcheckerv1alpha1.WebCheckerStatus{Shard: strings.Clone("replica-0"), Quorum: strings.Clone("2/3"), Conditions: []metav1.Condition{{
				Type: strings.Clone("Ready"), Status: metav1.ConditionStatus(strings.Clone("True")), Reason: strings.Clone("ProbeSucceeded"), Message: message,
			}}},
		}
		out, err := transform(wc)
		require.NoError(t, err)
		return out.(*webcheckerv1alpha1.WebChecker)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	long := strings.Repeat("x", poolMaxLen+1)
	a, b := decoded("a", strings.Clone("WebChecker is ready")), decoded("b", strings.Clone("WebChecker is ready"))
	assert.Equal(t, "team-a", b.Namespace)
	for field, pair := range map[string][2]string{
		"apiVersion": {a.APIVersion, b.APIVersion}, "kind": {a.Kind, b.Kind},
		"namespace": {a.Namespace, b.Namespace}, "host": {a.Spec.Host, b.Spec.Host}, "method": {a.Spec.Method, b.Spec.Method},
		"ipFamily": {string(a.Spec.IPFamily), string(b.Spec.IPFamily)},
		"shard":    {a.Status.Shard, b.Status.Shard}, "quorum": {a.Status.Quorum, b.Status.Quorum}, "type": {a.Status.Conditions[0].Type, b.Status.Conditions[0].Type},
		"status": {string(a.Status.Conditions[0].Status), string(b.Status.Conditions[0].Status)},
		"reason": {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason}, "message": {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
	} {
		assert.True(t, same(pair[0], pair[1]), "%s not shared", field)
	}
	c, d := decoded("c", strings.Clone(long)), decoded("d", strings.Clone(long))
	assert.False(t, same(c.Status.Conditions[0].Message, d.Status.Conditions[0].Message), "a string over the pool's length is kept as it is")
	assert.Equal(t, long, d.Status.Conditions[0].Message)

	full := newStringPool(1, poolMaxLen)
	full.intern("first")
	other := strings.Clone("second")
	assert.True(t, same(other, full.intern(other)), "a full pool hands the string back")
	assert.Equal(t, "second", full.intern(strings.Clone("second")))
}

// TestCacheServesCheckersWithoutUnreadFields builds a cache with the
// replica's cache options and checks that a WebChecker created as kubectl
// apply creates it (with the last-applied annotation, and managedFields
// written by the API server) is served without either.
func TestCacheServesCheckersWithoutUnreadFields(t *testing.T) {
	cp := controlPlane(t)
	direct, err := client.New(cp.Config, client.Options{Scheme: newScheme()})
	require.NoError(t, err)
	wc := &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "applied", Annotations: map[string]string{
			lastAppliedAnnotation: `{"apiVersion":"test.network.io/v1alpha1","kind":"WebChecker","metadata":{"name":"applied","namespace":"default"},"spec":{"host":"http://example.invalid"}}`,
			"team":                "platform",
		}},
		Spec: webcheckerv1alpha1.WebCheckerSpec{Host: "http://example.invalid", Path: "/"},
	}
	require.NoError(t, direct.Create(context.Background(), wc, client.FieldOwner("kubectl-client-side-apply")))
	t.Cleanup(func() { _ = direct.Delete(context.Background(), wc) })
	stored := &webcheckerv1alpha1.WebChecker{}
	require.NoError(t, direct.Get(context.Background(), client.ObjectKeyFromObject(wc), stored))
	require.NotEmpty(t, stored.ManagedFields, "the API server wrote no managedFields")
	require.Contains(t, stored.Annotations, lastAppliedAnnotation)

	opts := cacheOptions("default", "cache-test")
	opts.Scheme = newScheme()
	c, err := cache.New(cp.Config, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	cached := &webcheckerv1alpha1.WebChecker{}
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(wc), cached) == nil
	}, 10*time.Second, 50*time.Millisecond, "the cache never served the checker")
	assert.Empty(t, cached.ManagedFields)
	assert.Equal(t, map[string]string{"team": "platform"}, cached.Annotations)
	assert.Equal(t, stored.Spec, cached.Spec)
	assert.Equal(t, stored.ResourceVersion, cached.ResourceVersion)
}

// TestCheckerKeysReadTheCachedObjects lists the checkers of a synced cache
// as the Assigner does at every change of the ring: every checker once,
// with the vantage points it asks for, from a cache of all namespaces and
// from one of several. From the former the listing copies no cached
// object: it allocates far less per checker than one WebChecker's 768
// bytes, which a List, even without a deep copy, copies into its Items.
func TestCheckerKeysReadTheCachedObjects(t *testing.T) {
	const perNamespace = 150
	cp := controlPlane(t)
	ctx := context.Background()
	direct, err := client.New(cp.Config, client.Options{Scheme: newScheme()})
	require.NoError(t, err)
	// Generated names: envtest runs no namespace controller, so a deleted
	// namespace stays terminating and a rerun (-count) cannot reuse it.
	var namespaces []string
	var want []sharding.Checker
	for range 2 {
		created := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "keys-"}}
		require.NoError(t, direct.Create(ctx, created))
		ns := created.Name
		namespaces = append(namespaces, ns)
		for i := range perNamespace {
			wc := &webcheckerv1alpha1.WebChecker{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("wc-%03d", i)},
				Spec:       webcheckerv1alpha1.WebCheckerSpec{Host: "http://example.invalid", Path: "/"},
			}
			vantagePoints := 1
			if i%3 == 0 {
				vantagePoints = 2
				wc.Spec.VantagePoints = ptr.To(int32(vantagePoints))
			}
			require.NoError(t, direct.Create(ctx, wc))
			want = append(want, sharding.Checker{Key: client.ObjectKeyFromObject(wc), VantagePoints: vantagePoints})
		}
	}
	t.Cleanup(func() {
		for _, ns := range namespaces {
			_ = direct.DeleteAllOf(ctx, &webcheckerv1alpha1.WebChecker{}, client.InNamespace(ns))
			_ = direct.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	})

	synced := func(t *testing.T, opts cache.Options) cache.Cache {
		opts.Scheme = newScheme()
		c, err := cache.New(cp.Config, opts)
		require.NoError(t, err)
		cctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		go func() { _ = c.Start(cctx) }()
		require.True(t, c.WaitForCacheSync(cctx))
		// The informer starts on first use; wait until it has every checker.
		require.EventuallyWithT(t, func(c2 *assert.CollectT) {
			var list webcheckerv1alpha1.WebCheckerList
			require.NoError(c2, c.List(cctx, &list, client.InNamespace(namespaces[1])))
			assert.Len(c2, list.Items, perNamespace)
		}, 20*time.Second, 50*time.Millisecond)
		return c
	}
	inNamespaces := func(all []sharding.Checker) []sharding.Checker {
		var out []sharding.Checker
		for _, c := range all {
			if slices.Contains(namespaces, c.Key.Namespace) {
				out = append(out, c)
			}
		}
		return out
	}

	t.Run("all namespaces", func(t *testing.T) {
		keys := checkerKeys(synced(t, cacheOptions("default", "keys-test")))
		got, err := keys(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, want, inNamespaces(got))

		const rounds = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range rounds {
			got, err = keys(ctx)
			require.NoError(t, err)
		}
		runtime.ReadMemStats(&after)
		perChecker := float64(after.TotalAlloc-before.TotalAlloc) / float64(rounds*len(got))
		t.Logf("%d checkers: %.0f bytes allocated per checker listed", len(got), perChecker)
		assert.Less(t, perChecker, 256.0, "the listing copies the cached objects")
	})
	t.Run("several namespaces", func(t *testing.T) {
		opts := controllers.WatchScope{Namespaces: namespaces}.ApplyTo(cacheOptions("default", "keys-test"))
		got, err := checkerKeys(synced(t, opts))(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, want, got)
	})
}
