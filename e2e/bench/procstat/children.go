package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// FindChild returns the pid of the child process of parent (Self for the
// calling process) whose command name (the comm of /proc/<pid>/stat, at
// most 15 bytes) is comm, so that a benchmark can measure a process a
// library started for it, such as envtest's kube-apiserver. It fails when
// there is none or more than one.
func FindChild(parent int, comm string) (int, error) {
	if parent == Self {
		parent = os.Getpid()
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("listing processes: %w", err)
	}
	var found []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + entry.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		name, ppid, err := parseStatParent(stat)
		if err == nil && ppid == parent && name == comm {
			found = append(found, pid)
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("no child %q of pid %d", comm, parent)
	case 1:
		return found[0], nil
	default:
		return 0, fmt.Errorf("%d children %q of pid %d: %v", len(found), comm, parent, found)
	}
}

// parseStatParent returns the command name (field 2) and the parent pid
// (field 4) from the text of /proc/<pid>/stat.
func parseStatParent(stat []byte) (string, int, error) {
	start, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if start < 0 || end < start {
		return "", 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 2 {
		return "", 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, fmt.Errorf("parent pid %q: %w", fields[1], err)
	}
	return string(stat[start+1 : end]), ppid, nil
}
