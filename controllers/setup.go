package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
	"github.com/networkio/webchecker/sharding"
	"github.com/networkio/webchecker/sharding/membership"
)

// ReplicaOptions configure one replica of the operator: what Setup wires
// into a manager.
type ReplicaOptions struct {
	// ShardID is this replica's identity (Lease name, status.shard).
	ShardID string
	// Prober runs the probes.
	Prober probing.Prober
	// ProbeWorkers bounds concurrent probes (scheduler default when 0).
	ProbeWorkers int
	// InitialJitter bounds the delay of a checker's first probe (scheduler
	// default when 0).
	InitialJitter time.Duration
	// LeaseNamespace and RingName select the ring's Leases.
	LeaseNamespace, RingName string
	// LeaseDuration, RenewInterval and SafetyMargin time the Lease (see
	// membership.HeartbeatOptions; defaults when 0).
	LeaseDuration, RenewInterval, SafetyMargin time.Duration
	// VirtualNodes per replica on the ring (ring default when 0).
	VirtualNodes int
	// Clock drives leases and scheduling (the real clock when nil).
	Clock clock.WithTickerAndDelayedExecution
	// Logger is the parent logger of every component.
	Logger logr.Logger
	// SecretAccess lets checkers read header values, credentials and CA
	// bundles from Secrets in their namespace (read and watched through
	// the manager's cache). When false the replica never reads or watches
	// a Secret, and needs no RBAC for them.
	SecretAccess bool
	// Scope limits the namespaces served and the Secrets used; the
	// manager's cache must be built with Scope.ApplyTo.
	Scope WatchScope
	// Registerer receives the replica's metrics. Nil means
	// controller-runtime's metrics.Registry, which the manager serves; a
	// process that runs several replicas (tests) gives each its own.
	Registerer prometheus.Registerer
}

// CacheOptions restricts the manager's cache to what a replica needs: the
// Leases of its own ring only. Pass it to ctrl.Options.Cache.
func CacheOptions(leaseNamespace, ringName string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&coordinationv1.Lease{}: sharding.LeaseCacheOptions(leaseNamespace, ringName),
	}}
}

// Replica is what Setup wired into the manager.
type Replica struct {
	Scheduler *scheduler.Scheduler
	Heartbeat *membership.Heartbeat
	Assigner  *sharding.Assigner
	Metrics   *metrics.Metrics
}

// Setup wires one replica into mgr: the Lease heartbeat, the ring assigner,
// the probe scheduler (all Runnables that run on every replica) and the
// WebChecker reconciler. mgr's cache must be built with CacheOptions.
func Setup(mgr ctrl.Manager, opts ReplicaOptions) (*Replica, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating lease client: %w", err)
	}
	if opts.Registerer == nil {
		opts.Registerer = ctrlmetrics.Registry
	}
	trigger := NewTrigger(0)
	r := &Replica{Metrics: metrics.New()}
	r.Heartbeat, err = membership.NewHeartbeat(membership.HeartbeatOptions{
		Client:        clientset.CoordinationV1(),
		Namespace:     opts.LeaseNamespace,
		ID:            opts.ShardID,
		RingName:      opts.RingName,
		LeaseDuration: opts.LeaseDuration,
		RenewInterval: opts.RenewInterval,
		SafetyMargin:  opts.SafetyMargin,
		Clock:         opts.Clock,
		Logger:        opts.Logger.WithName("heartbeat"),
	})
	if err != nil {
		return nil, err
	}
	r.Assigner, err = sharding.NewAssigner(sharding.AssignerOptions{
		ID:           opts.ShardID,
		Cache:        mgr.GetCache(),
		Namespace:    opts.LeaseNamespace,
		RingName:     opts.RingName,
		VirtualNodes: opts.VirtualNodes,
		Fencer:       r.Heartbeat,
		Keys:         CheckerKeys(mgr.GetCache()),
		Deleter:      mgr.GetClient(),
		Notify:       trigger.Notify,
		Clock:        opts.Clock,
		Logger:       opts.Logger.WithName("assigner"),
	})
	if err != nil {
		return nil, err
	}
	r.Scheduler, err = scheduler.New(scheduler.Options{
		Prober:        opts.Prober,
		Workers:       opts.ProbeWorkers,
		InitialJitter: opts.InitialJitter,
		Clock:         opts.Clock,
		Ownership:     r.Assigner,
		Notify:        trigger.Notify,
		Observer:      r.Metrics,
		Logger:        opts.Logger.WithName("scheduler"),
	})
	if err != nil {
		return nil, fmt.Errorf("creating scheduler: %w", err)
	}
	if err := r.Metrics.Register(opts.Registerer, r.Scheduler, r.Assigner); err != nil {
		return nil, err
	}
	for _, runnable := range []interface {
		Start(context.Context) error
		NeedLeaderElection() bool
	}{r.Heartbeat, r.Assigner, r.Scheduler} {
		if err := mgr.Add(runnable); err != nil {
			return nil, fmt.Errorf("adding runnable: %w", err)
		}
	}
	reconciler := &WebCheckerReconciler{Scheduler: r.Scheduler, Ownership: r.Assigner, Trigger: trigger, Metrics: r.Metrics}
	if opts.SecretAccess {
		reconciler.Secrets = mgr.GetClient()
	}
	reconciler.NamespaceSelector = opts.Scope.NamespaceSelector
	reconciler.SecretSelector = opts.Scope.SecretSelector
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up webchecker controller: %w", err)
	}
	return r, nil
}

// CheckerKeys returns a function listing the keys of every WebChecker in
// reader (the manager's cache).
func CheckerKeys(reader client.Reader) func(ctx context.Context) ([]types.NamespacedName, error) {
	return func(ctx context.Context) ([]types.NamespacedName, error) {
		var list webcheckerv1alpha1.WebCheckerList
		if err := reader.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing WebCheckers: %w", err)
		}
		keys := make([]types.NamespacedName, 0, len(list.Items))
		for i := range list.Items {
			keys = append(keys, client.ObjectKeyFromObject(&list.Items[i]))
		}
		return keys, nil
	}
}
