package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// TestAdmissionMemoryOfRegexChecks measures what the API server's own
// check of bodyMatch.regex costs it: kube-apiserver's VmRSS and VmHWM
// (from /proc) across 100 creates of the pattern in
// WEBCHECKER_MEASURE_ADMISSION ("worst" for the copies of
// .{1000}, "plain" for a usual one, or a pattern). Skipped without it:
//
//	WEBCHECKER_MEASURE_ADMISSION=worst KUBEBUILDER_ASSETS=$PWD/bin/k8s \
//	  go test -count=1 -v -run TestAdmissionMemoryOfRegexChecks ./controllers/
//
// Run it alone (one API server per run): the creates of other tests move
// the figures.
func TestAdmissionMemoryOfRegexChecks(t *testing.T) {
	expr := os.Getenv("WEBCHECKER_MEASURE_ADMISSION")
	switch expr {
	case "":
		t.Skip("set WEBCHECKER_MEASURE_ADMISSION to measure")
	case "worst":
		expr = worstPattern
	case "plain":
		expr = `"status"\s*:\s*"ok"`
	}
	pid := apiServerPID(t)
	ns := newNamespace(t)
	before := procStatus(t, pid)
	refused := 0
	for i := range 100 {
		wc := newChecker(ns, fmt.Sprintf("measure-%d", i), "http://127.0.0.1:1", "/")
		wc.Spec.Suspend = ptr.To(true)
		wc.Spec.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: expr}
		if err := k8sClient.Create(context.Background(), wc); err != nil {
			refused++
		}
	}
	after := procStatus(t, pid)
	t.Logf("kube-apiserver %d: VmRSS %s -> %s, VmHWM %s -> %s; %d of 100 refused",
		pid, before["VmRSS"], after["VmRSS"], before["VmHWM"], after["VmHWM"], refused)
}

// apiServerPID is the pid of envtest's kube-apiserver, a child of this
// process.
func apiServerPID(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) && strings.Contains(string(cmd), "kube-apiserver") {
			return pid
		}
	}
	t.Fatal("no kube-apiserver child process")
	return 0
}

// procStatus is the memory lines of /proc/<pid>/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(k, "Vm") {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
