package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
	"github.com/networkio/webchecker/sharding"
	"github.com/networkio/webchecker/sharding/membership"
)

// replicaOptions configure one replica of the operator: what setupReplica
// wires into a manager. Zero durations and counts take the defaults of the
// component they configure.
type replicaOptions struct {
	// shardID is this replica's identity (Lease name, status.shard).
	shardID string
	// zone is this replica's zone, published on its Lease ("" unknown).
	zone string
	// prober runs the probes.
	prober probing.Prober
	// probeWorkers, when positive, bounds the probes in flight besides
	// the memory budget derived from memoryLimit (see
	// scheduler.Options.MemoryLimit; the default budget when zero).
	probeWorkers int
	memoryLimit  int64
	// reconcileWorkers is the number of checkers reconciled at once
	// (controllers.DefaultReconcileWorkers when zero).
	reconcileWorkers int
	// namespaceShare is the share of the bound on probes in flight one
	// namespace may hold at once.
	namespaceShare float64
	// limits bound what one namespace takes of the reconcile workers,
	// the status writes and the Events (none when zero).
	limits controllers.NamespaceLimits
	// initialJitter bounds the delay of a checker's first probe.
	initialJitter time.Duration
	// leaseNamespace and ringName select the ring's Leases.
	leaseNamespace, ringName string
	// leaseDuration, renewInterval and safetyMargin time the Lease (see
	// membership.HeartbeatOptions).
	leaseDuration, renewInterval, safetyMargin time.Duration
	// virtualNodes per replica on the ring.
	virtualNodes int
	// clock drives leases, scheduling and status timestamps (the real
	// clock when nil).
	clock clock.WithTickerAndDelayedExecution
	// logger is the parent logger of every component.
	logger logr.Logger
	// secretAccess lets checkers read header values, credentials and CA
	// bundles from Secrets in their namespace. When false the replica never
	// reads or watches a Secret, and needs no RBAC for them.
	secretAccess bool
	// scope limits the namespaces served and the Secrets used; the
	// manager's cache must be built with scope.ApplyTo.
	scope controllers.WatchScope
	// registerer receives the replica's metrics (controller-runtime's
	// registry, which the manager serves, when nil).
	registerer prometheus.Registerer
	// metricLabels carries the allowlisted WebChecker labels to the
	// per-checker metrics; nil adds none.
	metricLabels *metrics.CheckerLabels
	// buildInfo labels webchecker_build_info; the zero value registers
	// none.
	buildInfo metrics.BuildInfo
	// exposition, when set, writes the per-checker series at every scrape
	// of the metrics server (see metrics.Exposition), instead of the
	// registerer.
	exposition *metrics.Exposition
	// checks builds the checkers' probes (conditions cache, default
	// proxy); the zero value compiles conditions on every reconcile and
	// uses no proxy.
	checks checkspec.CheckBuilder
	// networksListed, when set, blocks until the egress policy has the
	// cluster's networks (clusternet.Watcher.Listed): the replica waits
	// for it, at most joinWaitLimit, before joining the ring.
	networksListed func(ctx context.Context) error
}

// replica is what setupReplica wired into the manager.
type replica struct {
	scheduler *scheduler.Scheduler
	heartbeat *membership.Heartbeat
	assigner  *sharding.Assigner
	metrics   *metrics.Metrics
}

// setupReplica wires one replica into mgr, whose cache must be built with
// cacheOptions: the Lease heartbeat and the ring assigner (who owns which
// checker), the probe scheduler, the metrics, and the WebChecker
// reconciler. Probe outcomes and ownership changes reach the reconciler
// through one Trigger; the heartbeat, assigner and scheduler run on every
// replica.
func setupReplica(mgr ctrl.Manager, opts replicaOptions) (*replica, error) {
	if opts.clock == nil {
		opts.clock = clock.RealClock{}
	}
	if opts.registerer == nil {
		opts.registerer = ctrlmetrics.Registry
	}
	trigger := controllers.NewTrigger(0)
	r := &replica{metrics: metrics.New()}
	handOver := newHandOver(trigger)
	loaded := controllers.NewLoaded()
	var err error
	if r.heartbeat, r.assigner, err = setupMembership(mgr, opts, loaded, handOver); err != nil {
		return nil, err
	}
	r.scheduler, err = scheduler.New(scheduler.Options{
		Prober:         opts.prober,
		Workers:        opts.probeWorkers,
		MemoryLimit:    opts.memoryLimit,
		NamespaceShare: opts.namespaceShare,
		InitialJitter:  opts.initialJitter,
		Clock:          opts.clock,
		Owns:           r.assigner.ProbesTurn,
		Notify:         trigger.Notify,
		Observer:       r.metrics,
		Logger:         opts.logger.WithName("scheduler"),
	})
	if err != nil {
		return nil, fmt.Errorf("creating scheduler: %w", err)
	}
	if err := mgr.Add(r.scheduler); err != nil {
		return nil, fmt.Errorf("adding scheduler: %w", err)
	}
	// The scheduler asks the assigner who owns what, and the assigner
	// tells the scheduler (through handOver) what moved: one of the two is
	// completed after both exist, before the manager starts either.
	handOver.scheduler = r.scheduler
	ready := metrics.NewReadyStates()
	if opts.exposition != nil {
		err = r.metrics.RegisterStreamed(opts.registerer, opts.exposition, r.scheduler, r.assigner, opts.metricLabels, ready)
	} else {
		err = r.metrics.Register(opts.registerer, r.scheduler, r.assigner, opts.metricLabels, ready)
	}
	if err != nil {
		return nil, err
	}
	if opts.buildInfo != (metrics.BuildInfo{}) {
		if err := opts.registerer.Register(opts.buildInfo.Collector()); err != nil {
			return nil, fmt.Errorf("registering build info: %w", err)
		}
	}
	reconciler := &controllers.WebCheckerReconciler{
		Scheduler:         r.scheduler,
		Workers:           opts.reconcileWorkers,
		Ownership:         ownership{r.assigner},
		Trigger:           trigger,
		Loaded:            loaded,
		Clock:             opts.clock,
		Metrics:           r.metrics,
		Ready:             ready,
		NamespaceSelector: opts.scope.NamespaceSelector,
		NamespaceEgress:   true,
		SecretSelector:    opts.scope.SecretSelector,
		Checks:            opts.checks,
		Limits:            opts.limits,
	}
	if opts.secretAccess {
		reconciler.Secrets = mgr.GetClient()
	}
	// The metrics take the allowlisted labels and the SLO objective from
	// the checkers' labels: label changes are reconciled too.
	reconciler.MetricLabels = opts.metricLabels
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up webchecker controller: %w", err)
	}
	return r, nil
}

// handOver applies the assigner's changes of ownership. They reach the
// scheduler directly, without waiting for the API or a reconcile: a lost
// checker's probe in flight is cancelled at once, and a gained one is
// probed at its next grid point, or at once if a turn may have been missed
// (see scheduler.Scheduler.Gained). Every changed checker is also
// reconciled: a lost one is disowned there (its streak starts over), and a
// gained one that cannot be probed gets its status from its new owner.
//
// The reconciles go through a queue of their own (reconciles, drained by
// Start): the assigner never waits for a busy controller. A replica that
// carried every checker alone, its Trigger full of probe outcomes, took
// 5 s to hand the controller 5,142 lost checkers when a replica joined,
// and saw the next one join only after that.
type handOver struct {
	// scheduler is set before the manager starts.
	scheduler *scheduler.Scheduler
	trigger   controllers.Trigger
	// reconciles holds the changed checkers until the controller takes
	// them, each once however often it changed meanwhile.
	reconciles workqueue.TypedInterface[types.NamespacedName]
}

// newHandOver returns a handOver whose reconciles go to trigger once it
// is started.
func newHandOver(trigger controllers.Trigger) *handOver {
	return &handOver{trigger: trigger, reconciles: workqueue.NewTyped[types.NamespacedName]()}
}

// Start hands the checkers that notify queued to the controller, in the
// order they changed, until ctx is done. It implements manager.Runnable.
func (h *handOver) Start(ctx context.Context) error {
	stop := context.AfterFunc(ctx, h.reconciles.ShutDown)
	defer stop()
	for {
		key, shutdown := h.reconciles.Get()
		if shutdown {
			return nil
		}
		h.trigger.Notify(ctx, key)
		h.reconciles.Done(key)
	}
}

// NeedLeaderElection is false: every replica hands its own changes over.
func (h *handOver) NeedLeaderElection() bool { return false }

// probingStopped waits for the scheduler to stop starting probes, on
// shutdown, and returns from when it started none (see
// membership.HeartbeatOptions.ProbingStopped).
func (h *handOver) probingStopped(ctx context.Context) (time.Time, bool) {
	return h.scheduler.StoppedProbing(ctx)
}

// resume makes up the turns skipped since since by a fencing that ended
// before it was published (see sharding.AssignerOptions.Resume).
func (h *handOver) resume(_ context.Context, since time.Time) {
	h.scheduler.Resume(since)
}

func (h *handOver) notify(ctx context.Context, c sharding.Change) {
	// A regrouped checker stays probed here: only its status changes.
	if !c.Regrouped {
		if c.Probes {
			h.scheduler.Gained(c.Key, c.UnprobedSince, c.Tolerance)
		} else {
			h.scheduler.Disown(c.Key)
		}
	}
	h.reconciles.Add(c.Key)
}

// joinWaitLimit bounds how long a starting replica waits for its
// reconciler to schedule every existing checker before it joins the ring
// anyway (10,000 checkers take a few seconds).
const joinWaitLimit = time.Minute

// firstTurnsWithin is how long after its Upsert a check's first turn may
// come, with the scheduler's InitialJitter set to jitter.
func firstTurnsWithin(jitter time.Duration) time.Duration {
	switch {
	case jitter < 0:
		return 0
	case jitter == 0:
		return scheduler.DefaultInitialJitter
	default:
		return jitter
	}
}

// setupMembership wires the replica's Lease heartbeat and the assigner that
// builds the ring from the Leases; the assigner reports every checker whose
// ownership changed to handOver. The heartbeat first writes the Lease once
// loaded has seen every checker of the synced cache planned, and on
// shutdown marks it with when handOver's scheduler stopped probing.
func setupMembership(mgr ctrl.Manager, opts replicaOptions, loaded *controllers.Loaded, handOver *handOver) (*membership.Heartbeat, *sharding.Assigner, error) {
	keys := checkerKeys(mgr.GetCache())
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, nil, fmt.Errorf("creating lease client: %w", err)
	}
	heartbeat, err := membership.NewHeartbeat(membership.HeartbeatOptions{
		Client:         clientset.CoordinationV1(),
		Namespace:      opts.leaseNamespace,
		ID:             opts.shardID,
		RingName:       opts.ringName,
		Zone:           opts.zone,
		LeaseDuration:  opts.leaseDuration,
		RenewInterval:  opts.renewInterval,
		SafetyMargin:   opts.safetyMargin,
		Clock:          opts.clock,
		Logger:         opts.logger.WithName("heartbeat"),
		ProbingStopped: handOver.probingStopped,
		BeforeJoin: func(ctx context.Context) error {
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				return ctx.Err()
			}
			if err := loaded.Wait(ctx, checkerNames(keys), joinWaitLimit); err != nil {
				return err
			}
			waitNetworksListed(ctx, opts)
			// Every checker scheduled comes to its first turn within the
			// initial jitter, skipped (not owned yet): then all are on
			// their grid, and none is probed at once as new when this
			// replica gains it.
			wait := firstTurnsWithin(opts.initialJitter)
			if wait <= 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-opts.clock.After(wait):
				return nil
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	assigner, err := sharding.NewAssigner(sharding.AssignerOptions{
		ID:           opts.shardID,
		Zone:         opts.zone,
		Cache:        mgr.GetCache(),
		Namespace:    opts.leaseNamespace,
		RingName:     opts.ringName,
		VirtualNodes: opts.virtualNodes,
		Fencer:       heartbeat,
		Keys:         keys,
		Deleter:      mgr.GetClient(),
		Notify:       handOver.notify,
		// A fencing shorter than the safety margin, which no other
		// replica can have noticed, pauses the replica instead of
		// moving its checkers away and back.
		FenceSettle: opts.safetyMargin,
		Resume:      handOver.resume,
		Clock:       opts.clock,
		Logger:      opts.logger.WithName("assigner"),
	})
	if err != nil {
		return nil, nil, err
	}
	for _, runnable := range []manager.Runnable{heartbeat, assigner, handOver} {
		if err := mgr.Add(runnable); err != nil {
			return nil, nil, fmt.Errorf("adding runnable: %w", err)
		}
	}
	return heartbeat, assigner, nil
}

// waitNetworksListed waits, at most joinWaitLimit, until the egress policy
// has the cluster's networks: a replica that joined before would deny
// every probe of its share ("cluster networks not listed yet"). One that
// cannot list them (RBAC, API server down) joins anyway, and its checkers
// say so.
func waitNetworksListed(ctx context.Context, opts replicaOptions) {
	if opts.networksListed == nil {
		return
	}
	wait, cancel := context.WithTimeout(ctx, joinWaitLimit)
	defer cancel()
	if err := opts.networksListed(wait); err != nil && ctx.Err() == nil {
		opts.logger.Error(err, "Joining the ring before the cluster networks are listed: probes are denied every address outside the allowed ranges until they are")
	}
}

// checkerNames turns a listing of checkers into one of their keys.
func checkerNames(checkers func(ctx context.Context) ([]sharding.Checker, error)) func(ctx context.Context) ([]types.NamespacedName, error) {
	return func(ctx context.Context) ([]types.NamespacedName, error) {
		cs, err := checkers(ctx)
		if err != nil {
			return nil, err
		}
		keys := make([]types.NamespacedName, len(cs))
		for i, c := range cs {
			keys[i] = c.Key
		}
		return keys, nil
	}
}
