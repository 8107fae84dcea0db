// Package procstat reads the CPU time and memory of a process from Linux's
// /proc, so that a benchmark can compare processes it did not build (a
// reference tool) with its own, measured the same way.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// Sample is what a process had used at one instant.
type Sample struct {
	// CPU is the user plus system time of all its threads so far.
	CPU time.Duration
	// RSS is its resident memory now, PeakRSS the most it has had.
	RSS, PeakRSS uint64
	// At is when the sample was taken.
	At time.Time
}

// Self is the pid that means the calling process.
const Self = 0

// Read samples the process pid (Self for the calling process).
func Read(pid int) (Sample, error) {
	s, err := ReadCPU(pid)
	if err != nil {
		return Sample{}, err
	}
	dir := procDir(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Sample{}, fmt.Errorf("reading memory: %w", err)
	}
	if s.RSS, s.PeakRSS, err = parseStatusMemory(status); err != nil {
		return Sample{}, fmt.Errorf("parsing %s/status: %w", dir, err)
	}
	return s, nil
}

// ReadCPU samples only the CPU time of the process pid (Self for the
// calling process), leaving RSS and PeakRSS zero. Unlike Read it works on
// a process that has exited but is not reaped yet (a zombie has no memory
// figures): a parent that waits for a child with WNOWAIT can read the CPU
// time of its whole life.
func ReadCPU(pid int) (Sample, error) {
	dir := procDir(pid)
	s := Sample{At: time.Now()}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return Sample{}, fmt.Errorf("reading CPU time: %w", err)
	}
	if s.CPU, err = parseStatCPU(stat); err != nil {
		return Sample{}, fmt.Errorf("parsing %s/stat: %w", dir, err)
	}
	return s, nil
}

// procDir is the /proc directory of pid.
func procDir(pid int) string {
	if pid == Self {
		return "/proc/self"
	}
	return "/proc/" + strconv.Itoa(pid)
}

// CPUSince is the CPU time used between earlier and s.
func (s Sample) CPUSince(earlier Sample) time.Duration { return s.CPU - earlier.CPU }

// parseStatCPU returns utime + stime from the text of /proc/<pid>/stat. The
// command name (field 2) may hold spaces and parentheses, so the fields are
// counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	// After ") " come fields 3 (state) onwards; utime and stime are fields
	// 14 and 15.
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// parseStatusMemory returns VmRSS and VmHWM, in bytes, from the text of
// /proc/<pid>/status.
func parseStatusMemory(status []byte) (rss, peak uint64, err error) {
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s %q: %w", name, value, err)
		}
		if name == "VmRSS" {
			rss = kib * 1024
		} else {
			peak = kib * 1024
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("VmRSS or VmHWM missing")
	}
	return rss, peak, nil
}
