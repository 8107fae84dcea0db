package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ManagerBinary returns the manager binary to run: $WEBCHECKER_MANAGER when
// set (make e2e builds bin/manager and sets it), else a fresh build of
// ./cmd/manager into dir.
func ManagerBinary(dir string) (string, error) {
	if bin := os.Getenv("WEBCHECKER_MANAGER"); bin != "" {
		return bin, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "manager")
	cmd := exec.Command("go", "build", "-tags", "grpcnotrace", "-o", bin, "./cmd/manager")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w\n%s", err, out)
	}
	return bin, nil
}

// LoopbackAllowance is the flag every manager the tests start gets: the
// tests' targets listen on loopback, which the manager denies by default.
const LoopbackAllowance = "--allow-cidrs=127.0.0.0/8,::1/128"

// ManagerOptions configure one manager process.
type ManagerOptions struct {
	// Binary is the manager executable.
	Binary string
	// Kubeconfig is the kubeconfig file it connects with.
	Kubeconfig string
	// ShardID is its --shard-id.
	ShardID string
	// DNSServer is its --dns-server; tests must always set it to a
	// loopback resolver.
	DNSServer string
	// Args are further flags, after the defaults (LoopbackAllowance
	// among them): the last value of a flag wins, so a test overrides a
	// default by passing the flag again (--allow-cidrs= denies loopback).
	Args []string
	// Output receives the process's stdout and stderr in addition to the
	// in-memory log (nil: only the log).
	Output io.Writer
}

// Manager is a running manager process.
type Manager struct {
	*process
	Options ManagerOptions
	// HealthAddr and MetricsAddr are the loopback addresses of its health
	// and metrics endpoints.
	HealthAddr, MetricsAddr string
}

// StartManager starts a manager process with its health and metrics
// endpoints on free loopback ports and waits until it reports healthy. A
// port free when picked can be taken before the manager binds it (by any
// connection's ephemeral port): a manager that exits because one of its
// ports is in use is started again on new ones, up to bindAttempts times.
func StartManager(ctx context.Context, opts ManagerOptions) (*Manager, error) {
	if opts.DNSServer == "" {
		return nil, errors.New("starting manager: DNSServer must be set to a loopback resolver")
	}
	for attempt := 1; ; attempt++ {
		m, err := startManager(ctx, opts)
		if err == nil || attempt == bindAttempts || !errors.Is(err, errPortTaken) {
			return m, err
		}
	}
}

// bindAttempts is how many times StartManager picks new ports for a
// manager whose ports were taken.
const bindAttempts = 3

// pickAddrs picks the n distinct loopback addresses a manager listens on;
// tests of the retry replace it.
var pickAddrs = FreeLoopbackAddrs

// errPortTaken marks a manager that exited because a port it was given to
// listen on was in use.
var errPortTaken = errors.New("a port picked for the manager was taken")

// startManager is one attempt of StartManager.
func startManager(ctx context.Context, opts ManagerOptions) (*Manager, error) {
	addrs, err := pickAddrs(2)
	if err != nil {
		return nil, err
	}
	health, metrics := addrs[0], addrs[1]
	args := append([]string{
		"--kubeconfig=" + opts.Kubeconfig,
		"--shard-id=" + opts.ShardID,
		"--dns-server=" + opts.DNSServer,
		"--health-probe-bind-address=" + health,
		"--metrics-bind-address=" + metrics,
		LoopbackAllowance,
	}, opts.Args...)
	p, err := startProcess("manager "+opts.ShardID, opts.Binary, args, opts.Output)
	if err != nil {
		return nil, err
	}
	m := &Manager{process: p, Options: opts, HealthAddr: health, MetricsAddr: metrics}
	// The manager binds its metrics and health addresses concurrently: it
	// can answer /readyz and exit right after, its metrics port taken.
	err = waitHTTPOK(ctx, p, "http://"+health+"/readyz", 60*time.Second)
	if err == nil {
		err = waitListening(ctx, p, metrics, 10*time.Second)
	}
	if err != nil {
		_ = m.Kill()
		if p.Exited() && strings.Contains(p.Log(), "address already in use") {
			return nil, fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, err
	}
	return m, nil
}

// waitListening polls addr until p accepts a connection there, p exits,
// or within passes.
func waitListening(ctx context.Context, p *process, addr string, within time.Duration) error {
	var dialer net.Dialer
	return waitUntil(ctx, p, "listening on "+addr, within, func(ctx context.Context) bool {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return !p.Exited()
	})
}

// waitHTTPOK polls url until it answers 200 OK, p exits, or within passes.
func waitHTTPOK(ctx context.Context, p *process, url string, within time.Duration) error {
	return waitUntil(ctx, p, "ready", within, func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitUntil polls done every 100 ms until it reports true, p exits, or
// within passes; what names the state awaited in the error.
func waitUntil(ctx context.Context, p *process, what string, within time.Duration, done func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for !done(ctx) {
		select {
		case <-p.done:
			return fmt.Errorf("not %s: %w", what, p.exitedError())
		case <-ctx.Done():
			return fmt.Errorf("%s not %s within %s\n%s", p.name, what, within, p.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// FreeLoopbackAddr returns a 127.0.0.1 address with a port that was free a
// moment ago.
func FreeLoopbackAddr() (string, error) {
	addrs, err := FreeLoopbackAddrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// FreeLoopbackAddrs returns n 127.0.0.1 addresses with distinct ports that
// were free a moment ago. Each is held until all are picked: a port
// released can be handed out again at once, and two addresses picked one
// after the other could be the same.
func FreeLoopbackAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}
