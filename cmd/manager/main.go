// Command manager runs the webchecker operator: it watches WebChecker
// objects, probes the servers they name and writes the outcome to their
// status.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// defaultGCPercent is the garbage collector's target unless GOGC is set:
// the heap may grow by about a third of its live size before a collection,
// not by all of it (Go's default, 100). The live heap is mostly the
// informer cache and the schedule, which last; the garbage is per probe
// and short-lived, so collecting more often costs little CPU: at 10,000
// checkers on three replicas, scraped, 35 held 76-78 MiB per replica, 40
// 79-80 and 50 82-83, with CPU per probe that varied more with the
// machine from run to run than with the setting, and 100 held about a
// fifth more (see the README, Performance). Prometheus sets 75 for the
// same reason.
const defaultGCPercent = 35

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	opts := defaultOptions()
	fs := flag.CommandLine // controller-runtime registers --kubeconfig here
	opts.bindFlags(fs)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		ctrl.Log.Error(err, "Manager exited with an error")
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}
