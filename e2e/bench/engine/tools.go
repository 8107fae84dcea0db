package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The reference tools, at the paths Debian's packages install them to.
const (
	blackboxBinary = "/usr/bin/prometheus-blackbox-exporter"
	wrkBinary      = "/usr/bin/wrk"
)

// aptHint is how to install the reference tools.
const aptHint = "apt-get install wrk prometheus-blackbox-exporter"

// tools are the reference tools found, with their versions.
type tools struct {
	blackbox, wrk               string
	blackboxVersion, wrkVersion string
}

// findTools checks that the reference tools are installed at blackbox and
// wrk (blackboxBinary and wrkBinary) and reads their versions; a missing
// tool is an error that says how to install them.
func findTools(blackbox, wrk string) (tools, error) {
	var missing []string
	for _, bin := range []string{blackbox, wrk} {
		if info, err := os.Stat(bin); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		return tools{}, fmt.Errorf("reference tools missing: %s; install the Debian packages with `%s`",
			strings.Join(missing, ", "), aptHint)
	}
	t := tools{blackbox: blackbox, wrk: wrk}
	var err error
	if t.blackboxVersion, err = toolVersion(blackbox, "--version"); err != nil {
		return tools{}, err
	}
	if t.wrkVersion, err = toolVersion(wrk, "-v"); err != nil {
		return tools{}, err
	}
	return t, nil
}

// toolVersion is the first line that binary prints given flag, and the
// version of the Debian package that owns binary when dpkg knows it.
func toolVersion(binary, flag string) (string, error) {
	// wrk -v prints its version then its usage, and exits 1: the output
	// matters, not the status.
	out, err := exec.Command(binary, flag).CombinedOutput()
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if first == "" {
		return "", fmt.Errorf("reading the version of %s: %v", binary, err)
	}
	version := strings.TrimSpace(first)
	if pkg := debianPackage(binary); pkg != "" {
		version += " (Debian package " + pkg + ")"
	}
	return version, nil
}

// debianPackage is "name version" of the package that installed binary,
// or "" when dpkg does not say.
func debianPackage(binary string) string {
	out, err := exec.Command("dpkg-query", "-S", binary).Output()
	if err != nil {
		return ""
	}
	name, _, ok := strings.Cut(strings.TrimSpace(string(out)), ":")
	if !ok {
		return ""
	}
	version, err := exec.Command("dpkg-query", "-W", "-f=${Version}", name).Output()
	if err != nil {
		return name
	}
	return name + " " + strings.TrimSpace(string(version))
}

// addParams records the tools' versions and how they were run in params.
func (t tools) addParams(params map[string]any, cfg config) {
	params["blackboxExporterVersion"] = t.blackboxVersion
	params["wrkVersion"] = t.wrkVersion
	params["wrkThreads"] = wrkThreads(cfg.concurrency)
	params["target"] = fmt.Sprintf("Go net/http server on 127.0.0.1 in a child process, answering %d \"ok\\n\"; its CPU is counted against no one", expectedStatus)
	params["engineCPU"] = "this process (procstat.Self) over each engine phase"
	params["blackboxCPU"] = "the exporter process alone; the driving clients run in the bench process and are not counted"
	params["wrkCPU"] = "the wrk process from /proc at its exit"
}
