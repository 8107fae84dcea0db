// Package controllers holds the WebChecker reconciler and its translation
// of a WebChecker's spec into a probe (CheckFor).
//
// The reconciler is the only writer of WebChecker status. It is triggered
// by two sources: changes of a WebChecker's spec (status-only updates are
// filtered out), and requests from outside the API server that arrive on a
// Trigger read through a controller-runtime source.Channel (probe outcomes
// from the scheduler, ownership changes from the ring). Each Reconcile first
// decides what this replica does with the checker (probe it, report why it
// cannot be probed, or leave it to its owner), applies that decision to the
// scheduler once, then writes the newest outcome to status with one
// optimistic-lock patch that is skipped when nothing changed, and records an
// Event when the Ready condition changes status.
//
// The reconciler depends on small interfaces it declares itself (Scheduler,
// Ownership, StatusWriteRecorder); cmd/manager wires the real ones.
package controllers
