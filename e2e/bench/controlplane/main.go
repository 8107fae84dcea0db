package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/networkio/webchecker/e2e/bench/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane bench:", err)
		stop()
		os.Exit(1)
	}
}

// run is the program: it parses args, measures every size, prints the
// table to stdout and writes the JSON report, even when a size failed
// (with what was measured until then). It returns the JSON file's path.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (string, error) {
	// envtest logs through controller-runtime's logger; the bench's output
	// is its table.
	ctrllog.SetLogger(logr.Discard())
	o, err := parseOptions(args, stderr)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(o.manager); err != nil {
		return "", fmt.Errorf("manager binary: %w", err)
	}
	rep := report.New(o.name, o.params())
	largest := slices.Max(o.sizes)
	var runErr error
	for _, size := range o.sizes {
		if runErr = runSize(ctx, &o, size, size == largest, rep, stderr); runErr != nil {
			runErr = fmt.Errorf("%d checkers: %w", size, runErr)
			break
		}
	}
	printErr := rep.Print(stdout)
	path, writeErr := rep.WriteJSON(o.out)
	if writeErr == nil {
		fmt.Fprintf(stdout, "\nwrote %s\n", path)
	}
	return path, errors.Join(runErr, printErr, writeErr)
}
