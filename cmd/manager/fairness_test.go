package main

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/controllers"
)

// TestNamespaceLimitsFromFlags: one namespace's share of the reconcile
// workers and of the API budget, and the message period, have their
// defaults, are set by their flags and reach the replica.
func TestNamespaceLimitsFromFlags(t *testing.T) {
	opts := defaultOptions()
	assert.Equal(t, controllers.NamespaceLimits{
		ReconcileShare: 0.25, StatusWriteRate: 25, StatusWriteBurst: 50, APIRate: 100, APIBurst: 200,
		EventInterval: 10 * time.Second, EventBurst: 25, MessagePeriod: time.Minute,
	}, opts.namespaceLimits())

	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts.bindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--reconcile-namespace-share=0.5", "--kube-api-qps=10", "--kube-api-burst=15", "--status-message-period=30s"}))
	require.NoError(t, opts.validate())
	limits := opts.replicaOptions(nil, controllers.WatchScope{}).limits
	assert.Equal(t, 0.5, limits.ReconcileShare)
	assert.Equal(t, 5.0, limits.StatusWriteRate)
	assert.Equal(t, 8, limits.StatusWriteBurst, "rounded up")
	assert.Equal(t, 30*time.Second, limits.MessagePeriod)

	tests := map[string]struct {
		args []string
		want string
	}{
		"share zero":      {[]string{"--reconcile-namespace-share=0"}, "--reconcile-namespace-share 0 must be greater than 0 and at most 1"},
		"share above one": {[]string{"--reconcile-namespace-share=1.5"}, "--reconcile-namespace-share 1.5 must be greater than 0 and at most 1"},
		"negative period": {[]string{"--status-message-period=-1s"}, "--status-message-period -1s must not be negative"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := defaultOptions()
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			opts.bindFlags(fs)
			require.NoError(t, fs.Parse(tc.args))
			assert.ErrorContains(t, opts.validate(), tc.want)
		})
	}
}
