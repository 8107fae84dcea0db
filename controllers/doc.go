// Package controllers holds the WebChecker reconciler.
//
// The reconciler is the only writer of WebChecker status. It is triggered
// by two sources: changes of a WebChecker's spec (status-only updates are
// filtered out), and probe outcomes that the scheduler delivers through a
// controller-runtime source.Channel. Each Reconcile registers, updates or
// removes the checker in the scheduler, then writes the newest outcome to
// status with one optimistic-lock patch that is skipped when nothing
// changed, and records an Event when the Ready condition changes status.
package controllers
