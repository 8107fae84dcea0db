// Package maintenance decides when a WebChecker is in a maintenance window.
//
// A window is either recurring (a cron schedule in a time zone, and how
// long each window lasts) or one-off (a start and an end). The package is
// pure: it never reads a clock, every decision takes the instant it is made
// at, and it knows nothing of Kubernetes. The controllers turn the windows
// of a checker's spec and of the WebCheckerMaintenance objects that select
// it into Windows, ask whether one is active now, and requeue the checker
// at the next instant that answer changes.
package maintenance
