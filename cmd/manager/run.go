package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

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
	r, err := setupReplica(mgr, replicaOpts)
	if err != nil {
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
	// The manager runs until the replica has left the ring, lead after
	// ctx is cancelled.
	mgrCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	left := make(chan struct{})
	go func() {
		defer close(left)
		defer stop()
		select {
		case <-ctx.Done():
			leaveRing(mgrCtx, r, opts.handOverLead, log)
		case <-mgrCtx.Done():
		}
	}()
	err = mgr.Start(mgrCtx)
	stop()
	<-left
	if err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	log.Info("Manager stopped")
	return nil
}

// leaveRing, called when the replica is asked to stop, announces on its
// Lease that it leaves the ring lead from now (see
// membership.Heartbeat.Leave) and returns then, having gone on probing
// meanwhile: the others take its checkers over at that instant on their
// own timers, so that neither a Lease event that reaches them late nor the
// release of the Lease delays a turn; from that instant it starts no turn
// (scheduler.Scheduler.LeaveAt), and it returns once it has started every
// turn due before it (at most catchUpLimit later). It returns at once when lead is 0,
// when no other replica is in its ring to take over (a single replica
// stops at once), when the announcement fails (the others then take over
// when the Lease is released), or when ctx is done.
func leaveRing(ctx context.Context, r *replica, lead time.Duration, log logr.Logger) {
	if lead <= 0 || !slices.ContainsFunc(r.assigner.Members(), func(id string) bool { return id != r.assigner.ShardID() }) {
		return
	}
	at := time.Now().Add(lead)
	announce, cancel := context.WithTimeout(ctx, lead)
	defer cancel()
	if err := r.heartbeat.Leave(announce, at); err != nil {
		log.Info("Stopping without a hand-over lead", "reason", err.Error())
		return
	}
	r.scheduler.LeaveAt(at)
	log.Info("Leaving the ring: probing until the others take over", "at", at, "lead", lead)
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return
	}
	// The turns due before the instant are this replica's: a busy one
	// starts them before it stops, or the others would not make them up.
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.After(catchUpLimit)
	for !r.scheduler.StartedBefore(at) {
		select {
		case <-ticker.C:
		case <-deadline:
			log.Info("Stopping with turns due before the hand-over not started", "waited", catchUpLimit)
			return
		case <-ctx.Done():
			return
		}
	}
}

// catchUpLimit bounds how long a leaving replica waits, after the instant
// it announced, for its dispatcher to start the turns due before it.
const catchUpLimit = 2 * time.Second

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
