// Package metrics defines the operator's Prometheus metrics and keeps them.
//
// There are three kinds:
//
//   - Per checker (labels namespace, name and the allowlisted WebChecker
//     labels). The probe series, webchecker_probe_success,
//     webchecker_probe_duration_seconds, webchecker_probe_http_status_code,
//     webchecker_probe_last_run_timestamp_seconds,
//     webchecker_probe_ssl_earliest_cert_expiry,
//     webchecker_probe_ssl_last_chain_info and
//     webchecker_probe_ssl_cert_not_before (over TLS only) and
//     webchecker_probes_total{result}, are exported by every replica that
//     probes the checker (its vantage points: spec.vantagePoints of them,
//     the owner alone by default), each labelled with its shard and zone.
//     The owner alone exports webchecker_ready, the checker's quorum state
//     (its Ready condition: 1 True, 0 False, absent Unknown; see
//     ReadyStates), and webchecker_slo_objective. None is stored in
//     vectors: they are read from the probe scheduler at scrape time, and
//     only for the checkers this replica probes or owns at that moment, so
//     that a checker that moved to another replica, or was deleted, is gone
//     from the next scrape: across replicas every checker has one series of
//     each per vantage point, and one webchecker_ready.
//   - Aggregates without per-checker labels, for SLOs and dashboards:
//     webchecker_probe_latency_seconds{result} and
//     webchecker_probe_phase_seconds{phase}, over every probe this replica
//     ran.
//   - The operator's own health: webchecker_scheduler_lag_seconds,
//     webchecker_scheduler_inflight, what the probes in flight hold of the
//     bound and the turns that could not be kept
//     (webchecker_scheduler_memory_budget_bytes, _inflight_bytes, _workers,
//     _saturated, _skipped_turns_total and
//     _delayed_turns_total{reason}), webchecker_status_writes_total{result},
//     webchecker_shard_members, webchecker_shard_member{member} (one per
//     ring member as this replica sees it), webchecker_shard_owned_checkers,
//     webchecker_shard_probed_checkers, webchecker_shard_fenced,
//     webchecker_shard_fencings_total, webchecker_shard_rebalances_total and
//     webchecker_shard_ring_changed_timestamp_seconds.
//
// A Metrics is registered on a prometheus.Registerer, usually
// controller-runtime's metrics.Registry, which the manager serves. The
// manager registers it with RegisterStreamed instead: the per-checker
// series are then written by an Exposition straight in the text format,
// after the registry's, at every scrape (a registry would hold every one
// of them in memory for the scrape's duration).
package metrics
