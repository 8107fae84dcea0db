package main

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsFromFlags(t *testing.T) {
	t.Setenv("POD_NAME", "webchecker-7d9f8-x2k4p")
	t.Setenv("POD_NAMESPACE", "monitoring")
	opts := defaultOptions()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts.bindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--probe-workers=8", "--lease-duration=6s"}))

	assert.Equal(t, "webchecker-7d9f8-x2k4p", opts.shardID)
	assert.Equal(t, "monitoring", opts.leaseNamespace)
	assert.Equal(t, 8, opts.probeWorkers)
	assert.Equal(t, 6*time.Second, opts.leaseDuration)
	assert.Equal(t, 1500*time.Millisecond, opts.safetyMargin())
	assert.NoError(t, opts.validate())
}

func TestOptionsValidate(t *testing.T) {
	tests := map[string]struct {
		mutate func(*options)
		want   string
	}{
		"no workers":                  {func(o *options) { o.probeWorkers = 0 }, "--probe-workers"},
		"no shard id":                 {func(o *options) { o.shardID = "" }, "--shard-id"},
		"no ring name":                {func(o *options) { o.ringName = "" }, "--ring-name"},
		"fractional lease":            {func(o *options) { o.leaseDuration = 2500 * time.Millisecond }, "whole number of seconds"},
		"renewal slower than fencing": {func(o *options) { o.leaseRenewInterval = 9 * time.Second }, "--lease-renew-interval"},
		"no virtual nodes":            {func(o *options) { o.virtualNodes = 0 }, "--virtual-nodes"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := defaultOptions()
			tc.mutate(&opts)
			assert.ErrorContains(t, opts.validate(), tc.want)
		})
	}
	assert.NoError(t, defaultOptions().validate())
}

func TestMetricsServerOptions(t *testing.T) {
	tests := map[string]struct {
		args       []string
		wantSecure bool
	}{
		"plain HTTP by default": {nil, false},
		"secure":                {[]string{"--metrics-secure"}, true},
		"secure off explicitly": {[]string{"--metrics-secure=false"}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := defaultOptions()
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			opts.bindFlags(fs)
			require.NoError(t, fs.Parse(append([]string{"--metrics-bind-address=:8443"}, tc.args...)))

			got := opts.metricsServerOptions()
			assert.Equal(t, ":8443", got.BindAddress)
			assert.Equal(t, tc.wantSecure, got.SecureServing)
			assert.Equal(t, tc.wantSecure, got.FilterProvider != nil, "authentication and authorization filter")
		})
	}
}
