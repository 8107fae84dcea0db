// Command manager runs the webchecker operator: it watches WebChecker
// objects, probes the servers they name and writes the outcome to their
// status.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
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
