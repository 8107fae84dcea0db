package controllers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing/scheduler"
)

// TestCheckForResolvesTheCRDDefaults holds the defaults declared in
// api/v1alpha1 to the CRD's: a spec the API server defaulted and the same
// spec stored bare (as before a default existed) give the same Check.
func TestCheckForResolvesTheCRDDefaults(t *testing.T) {
	t.Parallel()
	bare := newChecker(newNamespace(t), "defaults", "https://target.test", "")
	bare.Spec.Interval, bare.Spec.Timeout = nil, nil
	bare.Spec.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "ok"}
	bare.Spec.TLS = &webcheckerv1alpha1.TLSOptions{ServerName: "target.test"}
	stored := bare.DeepCopy()
	require.NoError(t, k8sClient.Create(context.Background(), stored))
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), stored) })
	require.NotNil(t, stored.Spec.Interval, "the API server applied no default")

	want, err := checkspec.CheckFor(stored, nil)
	require.NoError(t, err)
	bare.Generation = stored.Generation
	got, err := checkspec.CheckFor(bare, nil)
	require.NoError(t, err)
	assert.Equal(t, want.Interval, got.Interval)
	assert.True(t, want.Target.Equal(got.Target), "defaults differ:\nAPI server: %+v\nresolved:   %+v", want.Target, got.Target)
	assert.Equal(t, webcheckerv1alpha1.DefaultInterval, want.Interval)

	wantThresholds, err := checkspec.ThresholdsFor(stored)
	require.NoError(t, err)
	gotThresholds, err := checkspec.ThresholdsFor(bare)
	require.NoError(t, err)
	assert.Equal(t, wantThresholds, gotThresholds, "threshold defaults differ")
	assert.Equal(t, scheduler.Thresholds{Failure: 1, Success: 1}, wantThresholds)
}
