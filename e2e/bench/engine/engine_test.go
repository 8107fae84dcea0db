package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/bench/report"
)

// TestMain lets the test binary be the target server too, as the bench
// binary is: the smoke run re-executes it with "serve".
func TestMain(m *testing.M) {
	if isServe(os.Args) {
		fmt.Fprintln(os.Stderr, serve())
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestSmokeRun runs the whole bench at smoke size, reference tools
// included, and checks the JSON it writes: every section, every figure
// that cannot be zero not zero, the tools' versions, and no child process
// left behind. It checks behaviour, not speed: no goal must be met.
func TestSmokeRun(t *testing.T) {
	out := t.TempDir()
	var stdout, progress bytes.Buffer
	err := run(context.Background(), []string{"--smoke", "--out", out}, &stdout, &progress)
	require.NoError(t, err, "progress:\n%s", progress.String())
	assert.Empty(t, childPIDs(t), "child processes left after the run")

	data, err := os.ReadFile(filepath.Join(out, "engine.json"))
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(data, &rep))
	assert.Equal(t, "engine", rep.Bench)
	assert.Contains(t, rep.Params["blackboxExporterVersion"], "blackbox_exporter")
	assert.Contains(t, rep.Params["wrkVersion"], "wrk")
	assert.Contains(t, stdout.String(), sectionSchedule)

	rows := map[string]report.Row{}
	var titles []string
	for _, s := range rep.Sections {
		titles = append(titles, s.Title)
		for _, r := range s.Rows {
			rows[s.Title+": "+r.Name] = r
		}
	}
	cfg, err := parseConfig([]string{"--smoke"}, &bytes.Buffer{})
	require.NoError(t, err)
	tls, spread := sectionTLS(cfg), sectionSpread(cfg)
	assert.Equal(t, []string{sectionProber, sectionBlackbox, tls, spread, sectionWrk, sectionSchedule}, titles)
	assert.Contains(t, spread, "64 in flight over 100 addresses", "the issue's configuration")
	assert.Contains(t, tls, "32 in flight, 1 address")
	assert.EqualValues(t, 64, rep.Params["spreadConcurrency"])
	assert.Contains(t, rep.Params["spreadAddresses"], "127.0.1.1-127.0.1.100")
	assert.Contains(t, rep.Params["targetAddresses"], "127.0.0.1")
	for _, section := range []string{tls, spread} {
		for _, name := range []string{
			"webchecker probes/s", "webchecker probes per CPU-second",
			"blackbox exporter probes/s with probe_success 1", "blackbox exporter probes per CPU-second (exporter process only)",
		} {
			row, ok := rows[section+": "+name]
			if assert.True(t, ok, "row %q missing in %q", name, section) {
				assert.Positive(t, row.Value, section+": "+name)
			}
		}
		// A fresh connection per probe, TLS or not, for both (a probe that
		// timed out before its connection was accepted opened none).
		assert.InDelta(t, 1, rows[section+": webchecker connections per probe"].Value, 0.05, section)
		assert.InDelta(t, 1, rows[section+": blackbox exporter connections per probe"].Value, 0.05, section)
		// The smoke's timeout is 1 s: on a loaded machine (a load average
		// of 25 on 2 CPUs was seen, other tests running) a TLS handshake,
		// or a probe among 64 of the exporter, now and then takes longer.
		// Most succeed.
		wc, bb := rows[section+": webchecker probes/s"].Value, rows[section+": blackbox exporter probes/s with probe_success 1"].Value
		assert.Less(t, rows[section+": webchecker failed probes"].Value, 0.25*wc*cfg.duration.Seconds(), section)
		assert.Less(t, rows[section+": blackbox exporter failed probes"].Value, 0.25*bb*cfg.duration.Seconds(), section)
	}
	for _, name := range []string{
		sectionProber + ": probes/s, fresh connection",
		sectionProber + ": probes per CPU-second, fresh connection",
		sectionProber + ": probes/s, reused connections",
		sectionProber + ": probes per CPU-second, reused connections",
		sectionBlackbox + ": probes/s with probe_success 1",
		sectionBlackbox + ": probes per CPU-second (exporter process only)",
		sectionWrk + ": requests/s",
		sectionWrk + ": requests per CPU-second",
		sectionSchedule + ": probes/s achieved",
		sectionSchedule + ": engine CPU per probe",
		sectionSchedule + ": start lag p99",
		sectionSchedule + ": lag samples (second and later probes)",
	} {
		row, ok := rows[name]
		if assert.True(t, ok, "row %q missing", name) {
			assert.Positive(t, row.Value, name)
		}
	}
	for name, row := range rows {
		if row.Reference != "" {
			assert.Positive(t, row.Ratio, name)
		}
		if row.Goal != "" {
			assert.NotNil(t, row.Met, name)
		}
	}
	// A fresh connection is one connection per probe, for the engine as
	// for the exporter.
	assert.InDelta(t, 1, rows[sectionProber+": connections per probe, fresh"].Value, 0.01)
	assert.InDelta(t, 1, rows[sectionBlackbox+": connections per probe"].Value, 0.01)
	// Every probe of a healthy loopback target succeeds.
	for _, name := range []string{sectionProber + ": failed probes, fresh connection", sectionProber + ": failed probes, reused connections", sectionBlackbox + ": failed probes", sectionSchedule + ": failed probes"} {
		assert.Zero(t, rows[name].Value, name)
	}
}

// childPIDs lists the running children of the test process.
func childPIDs(t *testing.T) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	require.NoError(t, err)
	var pids []string
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		require.NoError(t, err)
		pids = append(pids, strings.Fields(string(data))...)
	}
	return pids
}

func TestParseWrk(t *testing.T) {
	const out = `Running 1s test @ http://127.0.0.1:40000/
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.94ms    1.10ms  14.04ms   80.00%
    Req/Sec     5.30k   437.29     5.90k    70.00%
  10559 requests in 1.00s, 1.24MB read
  Socket errors: connect 0, read 1, write 2, timeout 3
  Non-2xx or 3xx responses: 4
Requests/sec:  10559.42
Transfer/sec:      1.24MB
`
	var r wrkResult
	require.NoError(t, parseWrk(out, &r))
	assert.Equal(t, int64(10559), r.requests)
	assert.InDelta(t, 10559.42, r.rate, 1e-9)
	assert.Equal(t, int64(10), r.errors)

	assert.Error(t, parseWrk("unable to connect to 127.0.0.1:1 Connection refused\n", &r))
}

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, v := range n {
			d = append(d, time.Duration(v)*time.Millisecond)
		}
		return d
	}
	tests := map[string]struct {
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		"empty":          {nil, 0.99, 0},
		"one":            {ms(7), 0.5, 7 * time.Millisecond},
		"median of four": {ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		"p99 of hundred": {ms(seq(100)...), 0.99, 99 * time.Millisecond},
		"max":            {ms(1, 2, 3), 1, 3 * time.Millisecond},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, percentile(tt.sorted, tt.q))
		})
	}
}

// seq is 1..n.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

func TestMissingToolsSayHowToInstallThem(t *testing.T) {
	_, err := findTools("/nonexistent/prometheus-blackbox-exporter", wrkBinary)
	require.Error(t, err)
	assert.ErrorContains(t, err, "/nonexistent/prometheus-blackbox-exporter")
	assert.ErrorContains(t, err, "apt-get install wrk prometheus-blackbox-exporter")
}

func TestParseConfig(t *testing.T) {
	cfg, err := parseConfig([]string{"--smoke", "--checks", "50"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, time.Second, cfg.duration)
	assert.Equal(t, 2*time.Second, cfg.interval)
	assert.Equal(t, 50, cfg.checks, "an explicit flag wins over --smoke")

	_, err = parseConfig([]string{"--interval", "500ms"}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "--interval")
}
