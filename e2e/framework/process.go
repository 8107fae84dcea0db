package framework

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is a child process of the test that cannot outlive it.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  LockedBuffer
}

// startProcess starts binary with args. Its output goes to an in-memory log
// and, when out is not nil, to out as well.
func startProcess(name, binary string, args []string, out io.Writer) (*process, error) {
	p := &process{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	var w io.Writer = &p.log
	if out != nil {
		w = io.MultiWriter(&p.log, out)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	// If the test process dies, the kernel kills this one too: no process
	// outlives its test. A process group of its own keeps a terminal's
	// Ctrl-C away from it: whoever started it stops it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Terminate sends SIGTERM and waits up to within for the process to exit.
// It returns the process's exit error (nil for a clean exit).
func (p *process) Terminate(within time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		_ = p.Kill()
		return fmt.Errorf("%s did not exit within %s of SIGTERM", p.name, within)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *process) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// Freeze stops the process with SIGSTOP, as a paused VM or a process that
// gets no CPU: it runs nothing until Thaw, while the clock goes on.
// SIGKILL still ends it; SIGTERM waits for Thaw.
func (p *process) Freeze() error {
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("freezing %s: %w", p.name, err)
	}
	return nil
}

// Thaw lets a process stopped by Freeze run again (SIGCONT).
func (p *process) Thaw() error {
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("thawing %s: %w", p.name, err)
	}
	return nil
}

// Exited reports whether the process has exited.
func (p *process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Pid is the process's id, for reading its CPU time and memory from /proc.
func (p *process) Pid() int { return p.cmd.Process.Pid }

// Log returns everything the process printed so far.
func (p *process) Log() string { return p.log.String() }

// exitedError describes the exit of a process that should still run.
func (p *process) exitedError() error {
	return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.Log())
}
