package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
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
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/manager")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w\n%s", err, out)
	}
	return bin, nil
}

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
	// Args are further flags.
	Args []string
	// Output receives the process's stdout and stderr in addition to the
	// in-memory log (nil: only the log).
	Output io.Writer
}

// Manager is a running manager process.
type Manager struct {
	Options ManagerOptions
	// HealthAddr and MetricsAddr are the loopback addresses of its health
	// and metrics endpoints.
	HealthAddr, MetricsAddr string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  lockedBuffer
}

// StartManager starts a manager process with its health and metrics
// endpoints on free loopback ports and waits until it reports healthy.
func StartManager(ctx context.Context, opts ManagerOptions) (*Manager, error) {
	if opts.DNSServer == "" {
		return nil, errors.New("starting manager: DNSServer must be set to a loopback resolver")
	}
	health, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + opts.Kubeconfig,
		"--shard-id=" + opts.ShardID,
		"--dns-server=" + opts.DNSServer,
		"--health-probe-bind-address=" + health,
		"--metrics-bind-address=" + metrics,
	}, opts.Args...)
	m := &Manager{Options: opts, HealthAddr: health, MetricsAddr: metrics, done: make(chan struct{})}
	m.cmd = exec.Command(opts.Binary, args...)
	var out io.Writer = &m.log
	if opts.Output != nil {
		out = io.MultiWriter(&m.log, opts.Output)
	}
	m.cmd.Stdout, m.cmd.Stderr = out, out
	// If the test process dies, the kernel kills the manager too: no
	// process outlives its test. A process group of its own keeps a
	// terminal's Ctrl-C away from it: whoever started it stops it.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting manager %s: %w", opts.ShardID, err)
	}
	go func() {
		m.err = m.cmd.Wait()
		close(m.done)
	}()
	if err := m.waitHealthy(ctx, 60*time.Second); err != nil {
		_ = m.Kill()
		return nil, err
	}
	return m, nil
}

func (m *Manager) waitHealthy(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	url := "http://" + m.HealthAddr + "/readyz"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-m.done:
			return fmt.Errorf("manager %s exited before becoming ready: %v\n%s", m.Options.ShardID, m.err, m.Log())
		case <-ctx.Done():
			return fmt.Errorf("manager %s not ready within %s\n%s", m.Options.ShardID, within, m.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Terminate sends SIGTERM and waits up to within for the process to exit.
// It returns the process's exit error (nil for a clean exit).
func (m *Manager) Terminate(within time.Duration) error {
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling manager %s: %w", m.Options.ShardID, err)
	}
	select {
	case <-m.done:
		return m.err
	case <-time.After(within):
		_ = m.Kill()
		return fmt.Errorf("manager %s did not exit within %s of SIGTERM", m.Options.ShardID, within)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (m *Manager) Kill() error {
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing manager %s: %w", m.Options.ShardID, err)
	}
	<-m.done
	return nil
}

// Exited reports whether the process has exited.
func (m *Manager) Exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// Log returns everything the process printed so far.
func (m *Manager) Log() string { return m.log.String() }

// FreeLoopbackAddr returns a 127.0.0.1 address with a port that was free a
// moment ago.
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
