package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/networkio/webchecker/e2e/bench/procstat"
	"github.com/networkio/webchecker/e2e/framework"
)

// child is a process the bench started. It cannot outlive the bench: the
// kernel kills it when the bench dies (Pdeathsig), whatever the reason, and
// stop kills it on every normal way out.
type child struct {
	name string
	cmd  *exec.Cmd
	// out collects what the child printed, for error messages and for
	// parsing (wrk's report).
	out framework.LockedBuffer

	waitOnce sync.Once
	err      error
}

// startChild starts binary with args.
func startChild(name, binary string, args []string) (*child, error) {
	c := &child{name: name}
	c.cmd = exec.Command(binary, args...)
	c.cmd.Env = withoutProxies(os.Environ())
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	// Killed with the bench; a process group of its own keeps a
	// terminal's Ctrl-C away from it, so the bench stops it in order.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return c, nil
}

// withoutProxies drops the proxy settings from env: every child talks to
// 127.0.0.1 only, directly.
func withoutProxies(env []string) []string {
	var kept []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(strings.ToLower(name), "_proxy") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// pid is the child's process id, for procstat.
func (c *child) pid() int { return c.cmd.Process.Pid }

// wait reaps the child once and returns its exit error.
func (c *child) wait() error {
	c.waitOnce.Do(func() {
		c.err = c.cmd.Wait()
	})
	return c.err
}

// stop kills the child (if it still runs) and reaps it. It is safe to
// call more than once and after the child exited.
func (c *child) stop() {
	_ = c.cmd.Process.Kill() // fails (os.ErrProcessDone) once reaped
	_ = c.wait()
}

// runToExit waits for the child to exit on its own and returns its last
// sample from /proc: the child is read while it is a zombie (waited for
// with WNOWAIT, so its /proc entry and CPU times stay), then reaped.
func (c *child) runToExit() (procstat.Sample, error) {
	if err := waitExitedNoReap(c.pid()); err != nil {
		return procstat.Sample{}, fmt.Errorf("waiting for %s: %w", c.name, err)
	}
	last, readErr := procstat.ReadCPU(c.pid())
	if err := c.wait(); err != nil {
		return procstat.Sample{}, fmt.Errorf("%s: %w\n%s", c.name, err, c.out.String())
	}
	if readErr != nil {
		return procstat.Sample{}, fmt.Errorf("reading the CPU time of %s: %w", c.name, readErr)
	}
	return last, nil
}

// waitExitedNoReap blocks until pid has exited, leaving it a zombie
// (waitid with WNOWAIT), so that its /proc entry can still be read.
func waitExitedNoReap(pid int) error {
	const pPID, wNoWait = 1, 0x01000000 // P_PID and WNOWAIT of <sys/wait.h>
	var info [128]byte                  // siginfo_t, not read
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNoWait, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return fmt.Errorf("waitid: %w", errno)
		}
	}
}

// waitUntil calls ready every 20ms until it returns nil or within has
// passed, and returns ready's last error then.
func waitUntil(within time.Duration, ready func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := ready()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
