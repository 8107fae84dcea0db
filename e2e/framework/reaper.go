package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// startReaper guards against a test process that dies without stopping its
// control plane (a `go test -timeout` panic skips deferred calls): it starts
// a tiny shell process that waits for this process to exit and then kills
// the control plane's processes (envtest starts each in a process group of
// its own). It returns a function that stops the reaper after a normal stop.
func startReaper() (stop func(), err error) {
	children, err := childPIDs()
	if err != nil || len(children) == 0 {
		return func() {}, err
	}
	groups := make([]string, len(children))
	for i, pid := range children {
		groups[i] = "-" + strconv.Itoa(pid)
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; kill -9 %s 2>/dev/null",
		os.Getpid(), strings.Join(groups, " "))
	cmd := exec.Command("/bin/sh", "-c", script)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting control-plane reaper: %w", err)
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}, nil
}

// childPIDs lists the running children of this process that are
// control-plane binaries (kube-apiserver, etcd).
func childPIDs() ([]int, error) {
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		return nil, fmt.Errorf("listing child processes: %w", err)
	}
	var pids []int
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(field)
			if err != nil {
				continue
			}
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if err == nil && (filepath.Base(exe) == "kube-apiserver" || filepath.Base(exe) == "etcd") {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}
