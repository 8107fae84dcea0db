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
	"time"

	"github.com/networkio/webchecker/e2e/bench/procstat"
)

// blackboxModule is the module of the generated configuration.
const blackboxModule = "http_bench"

// blackboxConfig is the exporter's configuration: an http_2xx-like module
// that expects the target's status code, over IPv4 only (the targets are
// IPv4 literals, which it does not look up in DNS), with the probe timeout
// of the engine's checks.
func blackboxConfig(timeout time.Duration) string {
	return fmt.Sprintf(`modules:
  %s:
    prober: http
    timeout: %s
    http:
      method: GET
      valid_status_codes: [%d]
      preferred_ip_protocol: ip4
      ip_protocol_fallback: false
`, blackboxModule, timeout, expectedStatus)
}

// blackbox is a running prometheus-blackbox-exporter.
type blackbox struct {
	*child
	addr string
	dir  string
}

// startBlackbox writes the configuration to a temporary directory, starts
// the exporter on a free port of 127.0.0.1 and waits until it is healthy.
func startBlackbox(binary string, timeout time.Duration) (*blackbox, error) {
	dir, err := os.MkdirTemp("", "engine-bench-blackbox-")
	if err != nil {
		return nil, fmt.Errorf("creating the exporter's directory: %w", err)
	}
	config := filepath.Join(dir, "blackbox.yml")
	if err := os.WriteFile(config, []byte(blackboxConfig(timeout)), 0o644); err != nil {
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

// runBlackbox starts the exporter and drives it over GET /probe with
// cfg.concurrency clients for cfg.duration. Only probes whose answer has probe_success 1
// count as successful. The CPU measured is the exporter's; the clients'
// (this process's) is measured apart and not counted.
func runBlackbox(cfg config, tgt *target, binary string) (loopResult, time.Duration, error) {
	b, err := startBlackbox(binary, probeTimeout(cfg.interval))
	if err != nil {
		return loopResult{}, 0, err
	}
	defer b.stop()
	probeURL := "http://" + b.addr + "/probe?" + url.Values{"module": {blackboxModule}, "target": {tgt.url()}}.Encode()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: cfg.concurrency}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	m, err := startMeter(tgt, b.pid(), procstat.Self)
	if err != nil {
		return loopResult{}, 0, err
	}
	c := closedLoop(cfg.concurrency, cfg.duration, func() bool {
		resp, err := client.Get(probeURL)
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
