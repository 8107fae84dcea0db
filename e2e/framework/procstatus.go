package framework

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Memory is the resident memory of a process as the kernel reports it in
// /proc/<pid>/status, in bytes.
type Memory struct {
	// RSS is the resident set size now (VmRSS).
	RSS uint64
	// HWM is the peak resident set size since the process started (VmHWM):
	// a spike between two readings still shows in it.
	HWM uint64
}

// ReadMemory reads the resident memory of process pid (see Memory): for a
// Manager, pass m.Pid().
func ReadMemory(pid int) (Memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	var m Memory
	var found int
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		// The kernel writes "VmRSS:	  123456 kB".
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("reading the memory of process %d: %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.HWM = kb << 10
		}
		found++
	}
	if found != 2 {
		return Memory{}, fmt.Errorf("reading the memory of process %d: no VmRSS and VmHWM in its status", pid)
	}
	return m, nil
}

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ),
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// ReadCPUTime reads the CPU time, user and system, that process pid has
// used so far, from /proc/<pid>/stat.
func ReadCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis. utime and stime are fields 14
	// and 15 of the line, 12 and 13 after the name.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("reading the CPU time of process %d: no command name in its stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("reading the CPU time of process %d: %d fields in its stat", pid, len(fields))
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
