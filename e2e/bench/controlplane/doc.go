// Command controlplane is the control-plane benchmark of `make bench`: for
// each size it starts a fresh local control plane (kube-apiserver and etcd),
// three manager processes sharing one ring of Leases and a few HTTP targets
// on 127.0.0.1, creates that many WebCheckers (10 s interval, about 5 %
// answering 500) and measures
//
//   - how long creating them took, and how long from the first and from the
//     last create until every Ready condition reflects its target;
//   - a steady minute: status writes (the API server's own
//     apiserver_request_total and a watch's MODIFIED events; goal 0), API
//     requests per second, and each replica's RSS, CPU time and CPU per
//     probe, with the probes counted at the targets, while every replica's
//     /metrics is scraped every 15 s as Prometheus would (the scrapes'
//     size and duration are reported);
//   - a flip of 5 % of the healthy targets to 500: status writes until all
//     show False (goal: one per flipped checker), and how long that took;
//   - at the largest size, the hand-over: the longest gap between two probes
//     of a checker whose replica got SIGTERM, then of one whose replica got
//     SIGKILL, against the README's promises; and, at every size, double
//     probes (two probes of one checker less than half an interval apart).
//
// It prints a table and writes <out>/controlplane.json. It passes the
// managers only flags that older builds know too (lease timings, shard id,
// DNS server, ring and lease namespace), so the same bench measures an older
// binary for a before/after comparison; --manager-args adds more. --smoke
// runs every phase at a tiny size in well under a minute, as the package's
// test does.
//
// Every byte goes to 127.0.0.0/8, and no process it starts outlives it.
//
// Usage:
//
//	go run ./e2e/bench/controlplane [--sizes 1000,3000,10000] [--steady 60s]
//	    [--manager bin/manager] [--manager-args '--probe-workers=128'] [--out bin/bench]
//	    [--converge-within 5m] [--smoke]
package main
