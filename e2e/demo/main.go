// Command demo shows webchecker at work on a machine with no cluster: it
// starts a local control plane (kube-apiserver and etcd in a temporary
// directory), installs the CRD, starts HTTP targets on 127.0.0.1 (healthy,
// failing, slow, closed, flapping) and a TCP banner server, applies
// WebCheckers for them (and a dns checker of the loopback DNS stub, and
// CEL conditions on the healthy target) and the
// shipped samples, runs the manager and shows `kubectl get webcheckers`
// updating live. Three replicas, in zones a, b and c, share the checkers
// (see the SHARD column); the one in zone c may not reach 127.0.0.2, where
// the target of the quorum checker (vantagePoints: 3) listens, so that
// checker is Ready with 2 of 3 (the QUORUM column).
// Ctrl-C stops everything and leaves nothing running.
//
// Probes resolve names through a loopback DNS stub that knows no names, so
// nothing leaves the machine: the samples pointing at public hosts end
// Ready=False with reason DNSFailed.
//
// Run it with `make demo`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

func main() {
	binDir := flag.String("bin-dir", "bin", "Directory holding the built manager (bin/manager).")
	replicas := flag.Int("replicas", 3, "Number of manager replicas sharing the checkers (zones a, b, c, a, ...; the third may not reach 127.0.0.2).")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *binDir, *replicas); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// flapping answers 200 and 503 in turns of 20 seconds.
func flapping(w http.ResponseWriter, _ *http.Request) {
	if time.Now().Unix()/20%2 == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}

func run(ctx context.Context, binDir string, replicas int) (err error) {
	say("starting a local control plane (kube-apiserver + etcd)")
	cp, err := framework.StartControlPlane()
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the control plane")
		err = errors.Join(err, cp.Stop())
	}()

	// It resolves the targets' names for the probes, and is itself the
	// server the dns checker watches (demo.test is never connected to).
	dns, err := probetest.NewDNSServer(map[string][]net.IP{"demo.test": {net.ParseIP("192.0.2.10")}})
	if err != nil {
		return fmt.Errorf("starting the loopback DNS stub: %w", err)
	}
	defer dns.Close()

	manifest, stopTargets, err := startTargets(dns.Addr())
	defer stopTargets()
	if err != nil {
		return err
	}
	say("applying WebCheckers")
	if _, err := cp.Kubectl(manifest, "apply", "-f", "-"); err != nil {
		return err
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	if _, err := cp.Kubectl("", "apply", "-f", filepath.Join(root, "config", "samples", "test_v1alpha1_webchecker.yaml")); err != nil {
		return err
	}

	say(fmt.Sprintf("starting %d manager replicas", replicas))
	logFile, err := os.CreateTemp("", "webchecker-demo-manager-*.log")
	if err != nil {
		return fmt.Errorf("creating the manager log: %w", err)
	}
	defer logFile.Close()
	managers, err := startReplicas(ctx, binDir, cp.KubeconfigPath, dns.Addr(), replicas, logFile)
	defer func() {
		for _, mgr := range managers {
			say("stopping manager " + mgr.Options.ShardID)
			err = errors.Join(err, mgr.Terminate(30*time.Second))
		}
	}()
	if err != nil {
		return err
	}

	kubectl, err := framework.KubectlPath()
	if err != nil {
		return err
	}
	fmt.Printf("\nmanager logs: %s\nkubeconfig:   export KUBECONFIG=%s  (kubectl: %s)\n", logFile.Name(), cp.KubeconfigPath, kubectl)
	fmt.Printf("Watching `kubectl get webcheckers -o wide --watch`; press Ctrl-C to stop.\n\n")
	watch := exec.CommandContext(ctx, kubectl, "--kubeconfig="+cp.KubeconfigPath, "get", "webcheckers", "-o", "wide", "--watch")
	watch.Stdout, watch.Stderr = os.Stdout, os.Stderr
	watch.Cancel = func() error { return watch.Process.Signal(syscall.SIGTERM) }
	watch.WaitDelay = 5 * time.Second
	if err := watch.Run(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("kubectl get --watch: %w", err)
	}
	fmt.Println()
	return nil
}

// startTargets starts the servers the demo's checkers probe, all on
// loopback, and returns the checkers' manifest and a function that stops
// the servers (also those started before an error). dnsAddr is the DNS
// stub the dns checker queries.
func startTargets(dnsAddr string) (manifest string, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	healthy, broken, slow := probetest.NewTarget(), probetest.NewTarget(), probetest.NewTarget()
	stops = append(stops, healthy.Close, broken.Close, slow.Close)
	broken.SetStatus(http.StatusInternalServerError)
	slow.SetDelay(3 * time.Second)
	flap := &http.Server{Handler: http.HandlerFunc(flapping), ReadHeaderTimeout: 5 * time.Second}
	flapListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", stop, fmt.Errorf("starting the flapping target: %w", err)
	}
	go func() { _ = flap.Serve(flapListener) }()
	stops = append(stops, func() { _ = flap.Close() })
	closed, err := framework.FreeLoopbackAddr()
	if err != nil {
		return "", stop, err
	}
	banner, err := probetest.NewBannerServer(probetest.BannerOptions{Banner: "220 demo ESMTP ready\r\n", Close: true})
	if err != nil {
		return "", stop, fmt.Errorf("starting the banner target: %w", err)
	}
	stops = append(stops, func() { _ = banner.Close() })
	quorum, err := probetest.NewTargetAt(deniedIP)
	if err != nil {
		return "", stop, err
	}
	stops = append(stops, quorum.Close)
	manifest = fmt.Sprintf(demoManifests, healthy.URL(), broken.URL(), slow.URL(), flapListener.Addr().String(), closed,
		"tcp://"+banner.Addr(), "dns://"+dnsAddr, healthy.URL(), quorum.URL())
	return manifest, stop, nil
}

// deniedIP is the loopback address the third replica may not reach: the
// quorum checker's target listens there.
const deniedIP = "127.0.0.2"

// startReplicas starts n manager replicas writing their logs to out, in
// zones a, b, c, a, ...; the third may not reach deniedIP. It returns those
// it started, also on error.
func startReplicas(ctx context.Context, binDir, kubeconfig, dnsAddr string, n int, out io.Writer) ([]*framework.Manager, error) {
	var managers []*framework.Manager
	for i := range n {
		args := []string{"--zone=zone-" + string(rune('a'+i%3))}
		if i == 2 {
			// After framework.LoopbackAllowance, which it narrows: loopback
			// but 127.0.0.1 and ::1 is denied by default.
			args = append(args, "--allow-cidrs=127.0.0.1/32,::1/128", "--deny-cidrs="+deniedIP+"/32")
		}
		mgr, err := framework.StartManager(ctx, framework.ManagerOptions{
			Binary:     filepath.Join(binDir, "manager"),
			Kubeconfig: kubeconfig,
			ShardID:    fmt.Sprintf("demo-%d", i),
			DNSServer:  dnsAddr,
			Args:       args,
			Output:     out,
		})
		if err != nil {
			return managers, err
		}
		managers = append(managers, mgr)
	}
	return managers, nil
}

func say(msg string) { fmt.Printf("==> %s\n", msg) }

const demoManifests = `
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: healthy}
spec: {host: %q, path: /healthz, interval: 2s}
---
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: broken}
spec: {host: %q, path: /, interval: 2s}
---
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: slow}
spec: {host: %q, path: /slow, interval: 5s, timeout: 1s}
---
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: flapping}
spec: {host: %q, path: /, interval: 2s, method: HEAD, expectedStatusCodes: [200]}
---
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: closed-port}
spec: {host: %q, interval: 3s}
---
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: smtp-banner}
spec: {host: %q, interval: 3s, tcp: {expect: '^220 '}}
---
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: dns-answer}
spec: {host: %q, interval: 3s, dns: {name: demo.test, answerMatch: ['IN\s+A\s+192\.0\.2\.10$']}}
---
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: fast-enough}
spec:
  host: %q
  path: /healthz
  interval: 2s
  conditions:
  - expression: response.code == 200 && latency < duration("20ms")
    message: slower than 20ms
---
apiVersion: test.network.io/v1alpha1
kind: WebChecker
metadata: {name: quorum}
spec: {host: %q, path: /healthz, interval: 2s, vantagePoints: 3}
`
