package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/networkio/webchecker/e2e/bench/procstat"
)

// The modules of the generated configuration: http, and https trusting
// the bench's CA.
const (
	blackboxModule      = "http_bench"
	blackboxHTTPSModule = "https_bench"
)

// blackboxConfig is the exporter's configuration: http_2xx-like modules
// that expect the target's status code, over IPv4 only (the targets are
// IPv4 literals, which it does not look up in DNS), with the probe timeout
// of the engine's checks; the https one trusts only caFile and fails
// without TLS.
func blackboxConfig(timeout time.Duration, caFile string) string {
	return fmt.Sprintf(`modules:
  %[1]s:
    prober: http
    timeout: %[3]s
    http:
      method: GET
      valid_status_codes: [%[4]d]
      preferred_ip_protocol: ip4
      ip_protocol_fallback: false
  %[2]s:
    prober: http
    timeout: %[3]s
    http:
      method: GET
      valid_status_codes: [%[4]d]
      preferred_ip_protocol: ip4
      ip_protocol_fallback: false
      fail_if_not_ssl: true
      tls_config:
        ca_file: %[5]q
`, blackboxModule, blackboxHTTPSModule, timeout, expectedStatus, caFile)
}

// blackbox is a running prometheus-blackbox-exporter.
type blackbox struct {
	*child
	addr string
	dir  string
}

// startBlackbox writes the configuration to a temporary directory, starts
// the exporter on a free port of 127.0.0.1 and waits until it is healthy.
func startBlackbox(binary string, timeout time.Duration, caFile string) (*blackbox, error) {
	dir, err := os.MkdirTemp("", "engine-bench-blackbox-")
	if err != nil {
		return nil, fmt.Errorf("creating the exporter's directory: %w", err)
	}
	config := filepath.Join(dir, "blackbox.yml")
	if err := os.WriteFile(config, []byte(blackboxConfig(timeout, caFile)), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("writing the exporter's configuration: %w", err)
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c, err := startChild("prometheus-blackbox-exporter", binary, []string{
		"--config.file=" + config, "--web.listen-address=" + addr, "--log.level=warn",
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b := &blackbox{child: c, addr: addr, dir: dir}
	if err := waitUntil(10*time.Second, b.healthy); err != nil {
		b.stop()
		return nil, fmt.Errorf("the blackbox exporter did not become healthy within 10s: %w\n%s", err, c.out.String())
	}
	return b, nil
}

func (b *blackbox) healthy() error {
	resp, err := directClient.Get("http://" + b.addr + "/-/healthy")
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /-/healthy: %s", resp.Status)
	}
	return nil
}

// stop kills the exporter and removes its configuration.
func (b *blackbox) stop() {
	b.child.stop()
	_ = os.RemoveAll(b.dir)
}

// probeSucceeded is the line of a successful probe in the exporter's
// answer.
var probeSucceeded = []byte("\nprobe_success 1\n")

// blackboxRun is one closed loop of the exporter: its module, the targets
// it is given in turn, and how many clients drive it.
type blackboxRun struct {
	module      string
	targets     []string
	concurrency int
}

// runBlackbox starts the exporter and drives it over GET /probe with
// run.concurrency clients for cfg.duration, giving it run.targets in turn.
// Only probes whose answer has probe_success 1 count as successful. The
// CPU measured is the exporter's; the clients' (this process's) is
// measured apart and not counted.
func runBlackbox(cfg config, tgt *target, binary string, run blackboxRun) (loopResult, time.Duration, error) {
	b, err := startBlackbox(binary, probeTimeout(cfg.interval), tgt.caFile)
	if err != nil {
		return loopResult{}, 0, err
	}
	defer b.stop()
	urls := make([]string, len(run.targets))
	for i, target := range run.targets {
		urls[i] = "http://" + b.addr + "/probe?" + url.Values{"module": {run.module}, "target": {target}}.Encode()
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: run.concurrency}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	m, err := startMeter(tgt, b.pid(), procstat.Self)
	if err != nil {
		return loopResult{}, 0, err
	}
	var next atomic.Uint64
	c := closedLoop(run.concurrency, cfg.duration, func() bool {
		resp, err := client.Get(urls[next.Add(1)%uint64(len(urls))])
		if err != nil {
			return false
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return err == nil && resp.StatusCode == http.StatusOK && bytes.Contains(body, probeSucceeded)
	})
	u, err := m.stop()
	if err != nil {
		return loopResult{}, 0, err
	}
	return loopResult{counts: c, wall: u.wall, cpu: u.cpu[0], target: u.target}, u.cpu[1], nil
}

// directClient never goes through a proxy: every request of the bench is
// to 127.0.0.1.
var directClient = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
