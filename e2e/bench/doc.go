// Package bench holds webchecker's benchmarks, run by `make bench` (and, at
// a tiny size, by `make test` so that they cannot rot): each subpackage is
// a program that measures one part side by side with the reference tool in
// the same run, prints a table and writes its figures as JSON under
// bin/bench/.
//
//   - engine measures the HTTP prober and the scheduler, side by side with
//     the blackbox exporter and wrk (engine.json);
//   - controlplane measures a local control plane with three manager
//     replicas: convergence, a steady minute, a flip, the hand-over
//     (controlplane.json);
//   - procstat reads a process's CPU time and memory from /proc;
//   - report prints the tables and writes the JSON files.
package bench
