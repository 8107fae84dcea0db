package controllers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing/scheduler"
)

// The small interfaces the reconciler depends on; cmd/manager wires the
// real ones (a sharding.Assigner, the scheduler, the metrics).

// Ownership answers, for this replica, whether it is responsible for a
// checker right now (a sharding.Assigner). It must be safe for concurrent
// use and cheap: Owns is called on every reconcile and status write.
type Ownership interface {
	// ShardID is the identity of this replica, as written to status.shard.
	ShardID() string
	// Owns reports whether this replica probes the checker and writes its
	// status.
	Owns(key types.NamespacedName) bool
	// Probes reports whether this replica is, now, one of the vantage
	// points of the checker, which asks for vantagePoints of them: it
	// probes the checker. With one vantage point it is Owns.
	Probes(key types.NamespacedName, vantagePoints int) bool
	// Paused reports whether this replica is fenced for now without
	// having lost its checkers (its fencing is not yet a change of the
	// ring, see sharding.AssignerOptions.FenceSettle): Owns and Probes are
	// false, yet the checkers it owned stay its own, and what it would
	// write for them waits until the fencing ends or they are lost.
	Paused() bool
	// VantagePoints returns the replicas that probe the checker when it
	// asks for vantagePoints of them, the owner first: as many as asked
	// for, or every live replica when there are fewer.
	VantagePoints(key types.NamespacedName, vantagePoints int) []VantagePoint
}

// Scheduler is what the reconciler needs of the probe scheduler.
type Scheduler interface {
	Upsert(scheduler.Check)
	Remove(types.NamespacedName)
	Disown(types.NamespacedName)
	TakeOver(key types.NamespacedName, seen time.Time)
	Latest(types.NamespacedName) (scheduler.Outcome, bool)
	// SetBuilder is given the reconciler's buildCheck: the checks this
	// replica does not probe are upserted without their targets.
	SetBuilder(scheduler.Builder)
}

var _ Scheduler = (*scheduler.Scheduler)(nil)

// StatusWriteRecorder counts status patches by result (a *metrics.Metrics).
type StatusWriteRecorder interface {
	// StatusWritten counts one status patch that returned err (nil when
	// the API server accepted it).
	StatusWritten(err error)
}

// ReadyRecorder keeps the Ready and Maintenance conditions of the checkers
// this replica owns, and whether they fail while a dependency is down, for
// their metrics (a *metrics.ReadyStates).
type ReadyRecorder interface {
	// Set records the status of the checker's Ready condition.
	Set(key types.NamespacedName, ready metav1.ConditionStatus)
	// SetMaintenance records the status of its Maintenance condition
	// (empty when it has none).
	SetMaintenance(key types.NamespacedName, maintenance metav1.ConditionStatus)
	// SetDependencyDown records whether its Ready reason is DependencyDown.
	SetDependencyDown(key types.NamespacedName, down bool)
	// Delete forgets a checker that is no longer scheduled.
	Delete(key types.NamespacedName)
}

// MetricLabelRecorder keeps the labels of the scheduled checkers for their
// metrics (a *metrics.CheckerLabels).
type MetricLabelRecorder interface {
	// Set records the labels of a scheduled checker.
	Set(key types.NamespacedName, labels map[string]string)
	// Delete forgets a checker that is no longer scheduled.
	Delete(key types.NamespacedName)
}
