// Command controlplane is the control-plane benchmark of `make bench`: for
// each size it starts a fresh local control plane (kube-apiserver and etcd),
// --replicas manager processes (3) sharing one ring of Leases and a few
// HTTP targets on 127.0.0.1, creates that many WebCheckers (--interval
// 10 s, about 5 % answering 500) and measures
//
//   - how long creating them took, and how long from the first and from the
//     last create until every Ready condition reflects its target;
//   - a steady minute: status writes (the API server's own
//     apiserver_request_total and a watch's MODIFIED events; goal 0), API
//     requests per second, and each replica's RSS, CPU time and CPU per
//     probe, with the probes counted at the targets, while every replica's
//     /metrics is scraped every 15 s as Prometheus would (the scrapes'
//     size and duration are reported, and the scheduler's series read:
//     lag p50/p99, probes in flight, the memory budget, saturation,
//     skipped and delayed turns), and the API server's and etcd's CPU and
//     RSS;
//   - a flip of 5 % of the healthy targets to 500: status writes until all
//     show False (goal: one per flipped checker), and how long that took;
//   - at the largest size, the hand-over: the longest gap between two probes
//     of a checker whose replica got SIGTERM, then of one whose replica got
//     SIGKILL, against the README's promises; and, at every size, double
//     probes (two probes of one checker less than half an interval apart).
//
// --profile realistic makes the targets answer as servers on a network
// do: after a lognormal delay (median 80 ms, p99 1 s, capped at 2 s, or
// half the timeout), drawn from a fixed seed per checker and probe; 20 %
// of the checkers probe over https, trusting a CA the bench makes in
// memory through spec.tls.caSecretRef; 1 % probe a path that never
// answers (held until the client goes away, at most 70 s; timeout 10 s,
// or 90 % of the interval); 5 % get 500; the others have a 4 s timeout.
// At the largest size it then runs the failure sequence instead of the
// hand-over: a partition of one replica from the API server (through a
// proxy of its own) and a freeze of another (SIGSTOP), each past its Lease
// and back, with a window once the ring has settled; then SIGKILL of one
// replica, SIGTERM of a second once the first's promise has passed, a
// window while the rest carry every checker, and both back, each window
// measured as the steady one.
//
// It prints a table and writes <out>/<name>.json (controlplane.json,
// controlplane-realistic.json, with -<replicas>x<interval> for other
// fleets). It passes the
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
//	go run ./e2e/bench/controlplane [--profile instant|realistic] [--sizes 1000,3000,10000]
//	    [--replicas 3] [--interval 10s] [--lease-duration 10s] [--steady 60s]
//	    [--create-workers 64] [--create-clients 4] [--create-qps 5000]
//	    [--manager bin/manager] [--manager-args '--probe-workers=128'] [--out bin/bench]
//	    [--name controlplane] [--converge-within 5m] [--smoke]
package main
