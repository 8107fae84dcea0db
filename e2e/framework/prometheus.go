package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// PrometheusBinary returns the prometheus server to run: $PROMETHEUS when
// set, else `prometheus` on the PATH (Debian's package, which `make test`
// installs when it is missing).
func PrometheusBinary() (string, error) {
	if bin := os.Getenv("PROMETHEUS"); bin != "" {
		return bin, nil
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("no prometheus server: install Debian's prometheus package (make debian-tools) or set $PROMETHEUS: %w", err)
	}
	return bin, nil
}

// Prometheus is a real Prometheus server process on loopback that scrapes
// a fixed set of targets.
type Prometheus struct {
	*process
	// Addr is the loopback address of its web UI and HTTP API.
	Addr string
	api  promv1.API
}

// PrometheusOptions configure a Prometheus server.
type PrometheusOptions struct {
	// Dir holds its configuration and data.
	Dir string
	// Targets are the host:port addresses whose /metrics it scrapes.
	Targets []string
	// ScrapeInterval is how often it scrapes (also its scrape timeout and
	// rule evaluation interval).
	ScrapeInterval time.Duration
	// BearerToken, when set, makes it scrape over HTTPS with this token,
	// accepting the targets' self-signed certificates.
	BearerToken string
	// RuleFiles are Prometheus rule files (recording and alerting rules)
	// it loads and evaluates every ScrapeInterval.
	RuleFiles []string
}

// StartPrometheus starts a Prometheus server as opts say and waits until it
// is ready.
func StartPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error) {
	bin, err := PrometheusBinary()
	if err != nil {
		return nil, err
	}
	addr, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	auth := ""
	if opts.BearerToken != "" {
		tokenPath := filepath.Join(opts.Dir, "token")
		if err := os.WriteFile(tokenPath, []byte(opts.BearerToken), 0o600); err != nil {
			return nil, fmt.Errorf("writing prometheus token: %w", err)
		}
		auth = fmt.Sprintf(`
    scheme: https
    authorization:
      credentials_file: %s
    tls_config:
      insecure_skip_verify: true`, tokenPath)
	}
	rules := ""
	if len(opts.RuleFiles) > 0 {
		rules = fmt.Sprintf("rule_files: ['%s']\n", strings.Join(opts.RuleFiles, "', '"))
	}
	config := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
%[4]sscrape_configs:
  - job_name: webchecker%[3]s
    static_configs:
      - targets: ['%[2]s']
`, model.Duration(opts.ScrapeInterval), strings.Join(opts.Targets, "', '"), auth, rules)
	configPath := filepath.Join(opts.Dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("writing prometheus config: %w", err)
	}
	p, err := startProcess("prometheus", bin, []string{
		"--config.file=" + configPath,
		"--storage.tsdb.path=" + filepath.Join(opts.Dir, "data"),
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}, nil)
	if err != nil {
		return nil, err
	}
	if err := waitHTTPOK(ctx, p, "http://"+addr+"/-/ready", 60*time.Second); err != nil {
		_ = p.Kill()
		return nil, err
	}
	client, err := promapi.NewClient(promapi.Config{Address: "http://" + addr})
	if err != nil {
		_ = p.Kill()
		return nil, fmt.Errorf("creating prometheus client: %w", err)
	}
	return &Prometheus{process: p, Addr: addr, api: promv1.NewAPI(client)}, nil
}

// Query evaluates the PromQL expression expr now and returns its result,
// which must be an instant vector.
func (p *Prometheus) Query(ctx context.Context, expr string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	value, _, _, err := p.api.Query(ctx, expr, time.Now())
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	vector, ok := value.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %q: got a %s, not a vector", expr, value.Type())
	}
	return vector, nil
}

// Scalar evaluates expr, which must give exactly one sample, and returns
// its value; ok is false when the result is empty.
func (p *Prometheus) Scalar(ctx context.Context, expr string) (value float64, ok bool, err error) {
	vector, err := p.Query(ctx, expr)
	if err != nil {
		return 0, false, err
	}
	switch len(vector) {
	case 0:
		return 0, false, nil
	case 1:
		return float64(vector[0].Value), true, nil
	}
	return 0, false, fmt.Errorf("query %q: %d samples, want one", expr, len(vector))
}

// Targets returns the health of every scrape target by its address
// ("up", "down", "unknown").
func (p *Prometheus) Targets(ctx context.Context) (map[string]string, error) {
	result, err := p.api.Targets(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing prometheus targets: %w", err)
	}
	health := map[string]string{}
	for _, t := range result.Active {
		health[string(t.Labels[model.InstanceLabel])] = string(t.Health)
	}
	return health, nil
}
