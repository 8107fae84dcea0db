package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
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
