// Package controllers holds the WebChecker reconciler, which probes
// WebCheckers and writes their status; the translation of a spec into a
// probe is package checkspec's.
//
// The reconciler is the only writer of WebChecker status. It is triggered
// by two sources: changes of a WebChecker's spec (status-only updates are
// filtered out), and requests from outside the API server that arrive on a
// Trigger read through a controller-runtime source.Channel (probe outcomes
// the scheduler notifies: changed ones, and streaks that reached a
// threshold; ownership changes from the ring). Each Reconcile first decides
// what this replica does with the checker (plan: probe it, report why it
// cannot be probed, or leave it to its owner), applies that decision to the
// scheduler once, then computes the desired status and its Events from the
// stored status, the plan and the newest outcome (desiredStatus, a pure
// function), and writes it with one optimistic-lock patch that is skipped
// when nothing changed (writeStatus), on every path: one vantage point,
// several, suspended.
//
// The status has two conditions. Ready says whether the server answers as
// expected; it turns False after spec.failureThreshold consecutive failed
// probes and True after spec.successThreshold consecutive successful ones,
// counted by the scheduler with each outcome (scheduler.Outcome.Streak),
// never in the status; with spec.failureWindow it turns False once F of
// the last N probes failed and True once the window is healthy again,
// from the verdicts the scheduler keeps with the outcome
// (scheduler.Outcome.Recent). CertificateValid says whether the served
// certificate chain is valid beyond spec.tls.certExpiryWarning; an
// expiring certificate does not make Ready False. Events are recorded when
// Ready changes status or failure class and when the certificate starts to
// expire soon, expires, or is renewed.
//
// A replica that finds the status written by another replica (a take-over,
// or ownership that came back) starts from the stored conditions: the
// outcome it held from before is stale and is never written, and the
// streaks start over (scheduler.Scheduler.TakeOver). What the reconciler
// itself remembers between reconciles is its own writes and the time it
// has waited (a ledger in memory), never a probe fact.
//
// What the namespaces share in a replica is shared fairly
// (NamespaceLimits): one namespace holds at most its share of the
// reconcile workers, writes status at its share of the API budget (beyond
// it, only what the others leave), and records a bounded number of
// Events; a checker whose status changes only in a message is rewritten
// at most once per MessagePeriod.
//
// The reconciler depends on small interfaces it declares itself (Scheduler,
// Ownership, StatusWriteRecorder); cmd/manager wires the real ones.
package controllers
