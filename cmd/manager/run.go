package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/controllers/clusternet"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/controllers/metrics/scrapeauth"
	"github.com/networkio/webchecker/probing/scheduler"
)

// run is the composition root: it builds the manager from the flags, wires
// one replica into it (setupReplica) and blocks until ctx is cancelled
// (SIGTERM/SIGINT) or a component fails. When it returns, every probe has
// been cancelled and every goroutine it started has finished.
func run(ctx context.Context, flags options) error {
	opts, err := flags.parse()
	if err != nil {
		return err
	}
	log := ctrl.Log.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	exposition := metrics.NewExposition()
	mgr, err := ctrl.NewManager(opts.restConfig(cfg), ctrl.Options{
		Scheme:                 newScheme(),
		Cache:                  opts.scope.ApplyTo(cacheOptions(opts.leaseNamespace, opts.ringName)),
		Metrics:                opts.metricsServerOptions(exposition),
		HealthProbeBindAddress: opts.probeAddr,
		PprofBindAddress:       opts.pprofAddr,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	replicaOpts := opts.replicaOptions(opts.policy, opts.scope)
	if opts.denyClusterNetworks {
		networks, err := clusternet.New(clusternet.Options{
			Config: mgr.GetConfig(), HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(),
			Policy: opts.policy, Logger: ctrl.Log.WithName("clusternet"),
		})
		if err != nil {
			return err
		}
		if err := mgr.Add(networks); err != nil {
			return fmt.Errorf("adding the cluster networks watcher: %w", err)
		}
		replicaOpts.networksListed = networks.Listed
	}
	replicaOpts.metricLabels = opts.metricLabels
	replicaOpts.checks = checkspec.CheckBuilder{Judges: checkspec.NewJudgeCache(), Targets: checkspec.NewTargetCache(), Proxy: opts.proxy}
	replicaOpts.buildInfo = metrics.ReadBuildInfo(version, revision)
	replicaOpts.exposition = exposition
	if _, err := setupReplica(mgr, replicaOpts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}

	log.Info("Starting manager", "shardID", opts.shardID, "metricsSecure", opts.metricsSecure, "probeWorkers", opts.probeWorkers, "probeMemoryBudget", scheduler.MemoryBudget(opts.memoryLimit), "reconcileWorkers", opts.reconcileWorkers, "namespaceLimits", replicaOpts.limits.String(),
		"kubeAPIQPS", opts.kubeAPIQPS, "kubeAPIBurst", opts.kubeAPIBurst, "dnsServer", opts.dnsServer,
		"leaseNamespace", opts.leaseNamespace, "ringName", opts.ringName, "leaseDuration", opts.leaseDuration,
		"secretAccess", opts.secretAccess, "metricLabels", opts.metricLabels.LabelNames(), "version", replicaOpts.buildInfo.Version, "revision", replicaOpts.buildInfo.Revision, "egressPolicy", opts.policy.String(), "denyClusterNetworks", opts.denyClusterNetworks, "proxy", opts.proxy.String(), "scope", opts.scope.String())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	log.Info("Manager stopped")
	return nil
}

// The secure metrics endpoint asks the API server who a scraper is and
// whether it may GET /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsServerOptions serves metrics over plain HTTP, or, with
// --metrics-secure, over HTTPS to authenticated and authorized clients only.
// Either way exp writes the per-checker series after the registry's.
func (o options) metricsServerOptions(exp *metrics.Exposition) metricsserver.Options {
	if !o.metricsSecure {
		return metricsserver.Options{BindAddress: o.metricsAddr, FilterProvider: exposedBehind(exp, nil)}
	}
	return metricsserver.Options{
		BindAddress:    o.metricsAddr,
		SecureServing:  true,
		FilterProvider: exposedBehind(exp, scrapeauth.FilterProvider),
	}
}

// filterProvider is the type of metricsserver.Options.FilterProvider.
type filterProvider = func(*rest.Config, *http.Client) (metricsserver.Filter, error)

// exposedBehind returns the filter provider of the metrics server: its
// /metrics (the registry's handler) becomes exp's (see
// metrics.Exposition), behind the filter of auth when auth is not nil. The
// server has no other path the filter would apply to.
func exposedBehind(exp *metrics.Exposition, auth filterProvider) filterProvider {
	return func(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
		var authFilter metricsserver.Filter
		if auth != nil {
			f, err := auth(config, httpClient)
			if err != nil {
				return nil, err
			}
			authFilter = f
		}
		return func(log logr.Logger, registry http.Handler) (http.Handler, error) {
			h := exp.Handler(registry)
			if authFilter == nil {
				return h, nil
			}
			return authFilter(log, h)
		}, nil
	}
}
