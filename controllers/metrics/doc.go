// Package metrics defines the operator's Prometheus metrics and keeps them.
//
// There are three kinds:
//
//   - Per checker (labels namespace and name): webchecker_probe_success,
//     webchecker_probe_duration_seconds, webchecker_probe_http_status_code,
//     webchecker_probe_last_run_timestamp_seconds,
//     webchecker_probe_ssl_earliest_cert_expiry (https only) and
//     webchecker_probes_total{result}. They are not stored in vectors but
//     read from the probe scheduler at scrape time, and only for the
//     checkers this replica owns at that moment: a checker that moved to
//     another replica, or was deleted, is gone from the next scrape, so that
//     across replicas every checker has exactly one series of each.
//   - Aggregates without per-checker labels, for SLOs and dashboards:
//     webchecker_probe_latency_seconds{result} and
//     webchecker_probe_phase_seconds{phase}.
//   - The operator's own health: webchecker_scheduler_lag_seconds,
//     webchecker_scheduler_inflight, webchecker_status_writes_total{result},
//     webchecker_shard_members, webchecker_shard_owned_checkers and
//     webchecker_shard_rebalances_total.
//
// A Metrics is registered on a prometheus.Registerer, usually
// controller-runtime's metrics.Registry, which the manager serves.
package metrics
