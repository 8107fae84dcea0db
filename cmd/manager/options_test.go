package main

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime/debug"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/scheduler"
)

func TestOptionsFromFlags(t *testing.T) {
	t.Setenv("POD_NAME", "webchecker-7d9f8-x2k4p")
	t.Setenv("POD_NAMESPACE", "monitoring")
	opts := defaultOptions()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts.bindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--probe-workers=8", "--probe-namespace-share=0.25", "--lease-duration=6s", "--handover-lead=2s", "--allow-cidrs=169.254.170.2", "--deny-private-networks"}))

	assert.Equal(t, "webchecker-7d9f8-x2k4p", opts.shardID)
	assert.Equal(t, "monitoring", opts.leaseNamespace)
	assert.Equal(t, 8, opts.probeWorkers)
	assert.Equal(t, 0.25, opts.probeNamespaceShare)
	assert.Equal(t, 0.25, opts.replicaOptions(nil, controllers.WatchScope{}).namespaceShare, "wired to the replica")
	assert.Equal(t, 6*time.Second, opts.leaseDuration)
	assert.Equal(t, 1500*time.Millisecond, opts.safetyMargin())
	assert.Equal(t, 2*time.Second, opts.handOverLead)
	assert.NoError(t, opts.validate())
	assert.True(t, opts.secretAccess, "Secret access is on by default")

	policy, err := opts.egressPolicy()
	require.NoError(t, err)
	policy.SetClusterNetworks(nil) // listed: none
	for addr, denied := range map[string]bool{"169.254.169.254": true, "169.254.170.2": false, "fd00:ec2::254": true, "10.0.0.1": true, "192.0.2.1": true, "8.8.8.8": false} {
		assert.Equal(t, denied, policy.Check(netip.MustParseAddr(addr)) != nil, addr)
	}
}

// TestAPIBudgetFromFlags: the API budget and reconcile workers have their
// defaults, are set by their flags, and reach the rest.Config the manager
// is built with and the replica's options.
func TestAPIBudgetFromFlags(t *testing.T) {
	opts := defaultOptions()
	assert.Equal(t, 100.0, opts.kubeAPIQPS)
	assert.Equal(t, 200, opts.kubeAPIBurst)
	assert.Equal(t, controllers.DefaultReconcileWorkers, opts.reconcileWorkers)

	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts.bindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--kube-api-qps=50.5", "--kube-api-burst=80", "--reconcile-workers=3"}))
	require.NoError(t, opts.validate())

	base := &rest.Config{Host: "https://api.example:6443"}
	cfg := opts.restConfig(base)
	assert.Equal(t, float32(50.5), cfg.QPS)
	assert.Equal(t, 80, cfg.Burst)
	assert.Equal(t, base.Host, cfg.Host)
	assert.Zero(t, base.QPS, "the loaded config is copied, not changed")
	assert.Equal(t, 3, opts.replicaOptions(nil, controllers.WatchScope{}).reconcileWorkers)
}

// TestPprofFromFlags: the profiling endpoint is off unless
// --pprof-bind-address names an address.
func TestPprofFromFlags(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"disabled by default": {nil, "0"},
		"loopback":            {[]string{"--pprof-bind-address=127.0.0.1:6060"}, "127.0.0.1:6060"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := defaultOptions()
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			opts.bindFlags(fs)
			require.NoError(t, fs.Parse(tc.args))
			assert.Equal(t, tc.want, opts.pprofAddr)
		})
	}
}

func TestWatchScopeFromFlags(t *testing.T) {
	opts := defaultOptions()
	scope, err := opts.watchScope()
	require.NoError(t, err)
	assert.Empty(t, scope.Namespaces)
	assert.Nil(t, scope.NamespaceSelector, "every namespace by default")
	assert.Nil(t, scope.SecretSelector, "every Secret by default")

	opts.watchNamespaces, opts.namespaceSelector, opts.secretSelector = "team-a, team-b,", "webchecker=on", "webchecker.test.network.io/probe"
	scope, err = opts.watchScope()
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a", "team-b"}, scope.Namespaces)
	assert.Equal(t, "webchecker=on", scope.NamespaceSelector.String())
	assert.Equal(t, "webchecker.test.network.io/probe", scope.SecretSelector.String())
}

func TestMetricLabelsFromFlags(t *testing.T) {
	opts := defaultOptions()
	labels, err := opts.metricLabels()
	require.NoError(t, err)
	assert.Empty(t, labels.LabelNames(), "no label by default")

	opts.metricLabelsAllowlist = " team, app.kubernetes.io/part-of,,"
	labels, err = opts.metricLabels()
	require.NoError(t, err)
	assert.Equal(t, []string{"label_app_kubernetes_io_part_of", "label_team"}, labels.LabelNames())
}

func TestEgressDefaults(t *testing.T) {
	parse := func(t *testing.T, args ...string) *egress.Policy {
		t.Helper()
		opts := defaultOptions()
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		opts.bindFlags(fs)
		require.NoError(t, fs.Parse(args))
		policy, err := opts.egressPolicy()
		require.NoError(t, err)
		return policy
	}
	denied := func(p *egress.Policy, addr string) bool { return p.Check(netip.MustParseAddr(addr)) != nil }

	// By default the cluster networks are awaited: nothing outside
	// --allow-cidrs until they are listed.
	policy := parse(t)
	assert.True(t, denied(policy, "8.8.8.8"), "before the cluster networks are listed")
	policy.SetClusterNetworks(nil)
	for addr, want := range map[string]bool{
		"169.254.169.254": true, "fe80::1": true, "fd00:ec2::254": true, "fd20:ce::254": true, "100.100.100.200": true,
		"127.0.0.1": true, "::1": true, "0.0.0.0": true, "::": true, "10.0.0.1": false, "8.8.8.8": false,
	} {
		assert.Equal(t, want, denied(policy, addr), addr)
	}

	// --deny-cidrs adds to the defaults, --allow-cidrs opens them, and the
	// last --allow-cidrs wins (the e2e tests' override).
	policy = parse(t, "--deny-cidrs=10.0.0.0/8", "--allow-cidrs=127.0.0.0/8,::1/128", "--deny-cluster-networks=false")
	for addr, want := range map[string]bool{"127.0.0.1": false, "::1": false, "10.0.0.1": true, "169.254.169.254": true, "8.8.8.8": false} {
		assert.Equal(t, want, denied(policy, addr), addr)
	}
	policy = parse(t, "--allow-cidrs=127.0.0.0/8,::1/128", "--allow-cidrs=", "--deny-cluster-networks=false")
	assert.True(t, denied(policy, "127.0.0.1"), "the last --allow-cidrs wins")
}

func TestOptionsValidate(t *testing.T) {
	tests := map[string]struct {
		mutate func(*options)
		want   string
	}{
		"negative workers":            {func(o *options) { o.probeWorkers = -1 }, "--probe-workers"},
		"no namespace share":          {func(o *options) { o.probeNamespaceShare = 0 }, "--probe-namespace-share"},
		"namespace share above 1":     {func(o *options) { o.probeNamespaceShare = 1.5 }, "--probe-namespace-share"},
		"no shard id":                 {func(o *options) { o.shardID = "" }, "--shard-id"},
		"no ring name":                {func(o *options) { o.ringName = "" }, "--ring-name"},
		"zone with a space":           {func(o *options) { o.zone = "eu west" }, `--zone "eu west" must be a valid label value`},
		"fractional lease":            {func(o *options) { o.leaseDuration = 2500 * time.Millisecond }, "whole number of seconds"},
		"renewal slower than fencing": {func(o *options) { o.leaseRenewInterval = 9 * time.Second }, "--lease-renew-interval"},
		"no virtual nodes":            {func(o *options) { o.virtualNodes = 0 }, "--virtual-nodes"},
		"negative hand-over lead":     {func(o *options) { o.handOverLead = -time.Second }, "--handover-lead"},
		"hand-over lead past grace":   {func(o *options) { o.handOverLead = time.Minute }, "--handover-lead 1m0s must be between 0 and 20s"},
		"no api qps":                  {func(o *options) { o.kubeAPIQPS = 0 }, "--kube-api-qps"},
		"burst below qps":             {func(o *options) { o.kubeAPIQPS, o.kubeAPIBurst = 50, 40 }, "--kube-api-burst"},
		"no api burst":                {func(o *options) { o.kubeAPIQPS, o.kubeAPIBurst = 0.5, 0 }, "--kube-api-burst"},
		"no reconcile workers":        {func(o *options) { o.reconcileWorkers = 0 }, "--reconcile-workers"},
		"bad deny range":              {func(o *options) { o.denyCIDRs = "169.254.0.0/16,10.0.0.0/33" }, `--deny-cidrs: invalid address range "10.0.0.0/33"`},
		"bad namespace selector":      {func(o *options) { o.namespaceSelector = "team in (a" }, "--namespace-selector"},
		"bad secret selector":         {func(o *options) { o.secretSelector = "a=b=c" }, "--secret-selector"},
		"bad allow range":             {func(o *options) { o.allowCIDRs = "example.com" }, `--allow-cidrs: invalid address range "example.com"`},
		"bad metric label":            {func(o *options) { o.metricLabelsAllowlist = "team,not a label" }, `--metric-labels-allowlist: "not a label" is not a label name`},
		"metric labels that collide":  {func(o *options) { o.metricLabelsAllowlist = "a.b,a-b" }, "both become label_a_b"},
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

			got := opts.metricsServerOptions(metrics.NewExposition())
			assert.Equal(t, ":8443", got.BindAddress)
			assert.Equal(t, tc.wantSecure, got.SecureServing)
			assert.NotNil(t, got.FilterProvider, "the per-checker series, and with --metrics-secure authentication and authorization")
		})
	}
}

// TestExposedBehind checks the filter of the plain metrics server: its
// /metrics serves the registry's series, then those of the exposition
// (none before a replica registers them), and an auth filter comes first.
func TestExposedBehind(t *testing.T) {
	registry := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "# TYPE registry_series gauge\nregistry_series 1\n")
	})
	get := func(provider filterProvider) *httptest.ResponseRecorder {
		filter, err := provider(&rest.Config{}, http.DefaultClient)
		require.NoError(t, err)
		h, err := filter(logr.Discard(), registry)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec
	}

	plain := get(exposedBehind(metrics.NewExposition(), nil))
	assert.Equal(t, http.StatusOK, plain.Code)
	assert.Equal(t, "# TYPE registry_series gauge\nregistry_series 1\n", plain.Body.String())

	deny := func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
		return func(_ logr.Logger, _ http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "Forbidden", http.StatusForbidden) }), nil
		}, nil
	}
	assert.Equal(t, http.StatusForbidden, get(exposedBehind(metrics.NewExposition(), deny)).Code)
}

// TestParseBuildsOnce: parse gives run what the flags build (proxy,
// egress policy, scope, metric labels), or every problem at once.
func TestParseBuildsOnce(t *testing.T) {
	opts := defaultOptions()
	opts.proxyURL, opts.noProxy = "http://proxy.internal:3128", "internal"
	opts.watchNamespaces, opts.metricLabelsAllowlist = "shop, blog", "team"
	c, err := opts.parse()
	require.NoError(t, err)
	assert.Equal(t, "http://proxy.internal:3128", c.proxy.String())
	assert.Equal(t, []string{"shop", "blog"}, c.scope.Namespaces)
	assert.Equal(t, []string{"label_team"}, c.metricLabels.LabelNames())
	require.NotNil(t, c.policy)
	assert.Equal(t, opts, c.options)

	opts.probeWorkers, opts.denyCIDRs = -1, "not-a-range"
	_, err = opts.parse()
	assert.ErrorContains(t, err, "--probe-workers must not be negative")
	assert.ErrorContains(t, err, "--deny-cidrs")
}

// TestProbeBoundFromMemory: by default the probes in flight are bounded by
// memory only, derived from the process's memory limit (GOMEMLIMIT, which
// the chart sets from the container's), which reaches the replica.
func TestProbeBoundFromMemory(t *testing.T) {
	const limit = 256 << 20
	previous := debug.SetMemoryLimit(limit)
	t.Cleanup(func() { debug.SetMemoryLimit(previous) })

	opts := defaultOptions()
	assert.Zero(t, opts.probeWorkers, "no bound by number unless asked for")
	assert.Equal(t, int64(limit), opts.memoryLimit)
	replica := opts.replicaOptions(nil, controllers.WatchScope{})
	assert.Equal(t, int64(limit), replica.memoryLimit, "wired to the replica")
	assert.Equal(t, int64(64<<20), scheduler.MemoryBudget(replica.memoryLimit), "a quarter of the limit")
}
