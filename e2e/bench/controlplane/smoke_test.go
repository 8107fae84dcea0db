package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/bench/report"
	"github.com/networkio/webchecker/e2e/framework"
)

// TestSmoke runs the program at the smoke size, every phase included, and
// checks that the report has every section with plausible figures. It
// checks what the bench measured, not whether the goals were met.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and three managers")
	}
	manager, err := framework.ManagerBinary(t.TempDir())
	require.NoError(t, err)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	path, err := run(ctx, []string{"--smoke", "--manager", manager, "--out", out}, &stdout, &stderr)
	require.NoError(t, err, "stderr:\n%s", stderr.String())

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(data, &rep))
	assert.Equal(t, "controlplane", rep.Bench)
	assert.Equal(t, "5s", rep.Params["leaseDuration"])
	assert.Equal(t, "1s", rep.Params["leaseRenewInterval"])

	rows := func(section string) map[string]report.Row {
		for _, s := range rep.Sections {
			if s.Title == "30 checkers: "+section {
				byName := map[string]report.Row{}
				for _, r := range s.Rows {
					byName[r.Name] = r
				}
				return byName
			}
		}
		require.Failf(t, "missing section", "%q in\n%s", section, stdout.String())
		return nil
	}
	for _, section := range []string{"creation and first status", "steady window", "flip", "hand-over", "correctness and run"} {
		assert.Contains(t, stdout.String(), "## 30 checkers: "+section)
	}

	created := rows("creation and first status")
	assert.Equal(t, 30.0, created["checkers"].Value)
	assert.Equal(t, 2.0, created["failing from the start"].Value)
	assert.Positive(t, created["creation"].Value)
	first, last := created["all Ready reflect the targets, after the first create"].Value, created["all Ready reflect the targets, after the last create"].Value
	assert.Positive(t, first)
	assert.GreaterOrEqual(t, first, last)

	steady := rows("steady window")
	assert.GreaterOrEqual(t, steady["window"].Value, 3.0)
	assert.Positive(t, steady["API requests"].Value, "replicas renew their Leases")
	assert.Positive(t, steady["probes at the targets"].Value)
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		assert.Greater(t, steady[id+" RSS (most in the window)"].Value, 1.0, id)
		assert.Greater(t, steady[id+" peak RSS (VmHWM, since start)"].Value, 1.0, id)
		assert.Contains(t, steady, id+" CPU per probe")
	}

	flip := rows("flip")
	assert.Equal(t, 2.0, flip["flipped checkers"].Value)
	assert.Positive(t, flip["until all show False"].Value)
	assert.GreaterOrEqual(t, flip["status writes (watch MODIFIED)"].Value, 2.0, "every flipped checker was written")
	assert.GreaterOrEqual(t, flip["status writes (API server)"].Value, 2.0, "every flipped checker was written")

	handOver := rows("hand-over")
	for _, how := range []string{"SIGTERM", "SIGKILL"} {
		assert.Positive(t, handOver[how+": checkers of the stopped replica"].Value, how)
		gap := handOver[how+": longest probe gap"].Value
		assert.Positive(t, gap, how)
		assert.Less(t, gap, 30.0, how)
		assert.NotNil(t, handOver[how+": longest probe gap"].Met, how)
	}

	correct := rows("correctness and run")
	assert.Zero(t, correct["requests for no checker's path"].Value)
	assert.Contains(t, correct, "double probes (< interval/2 apart), whole run")
	assert.True(t, strings.HasPrefix(stdout.String(), "# controlplane bench"))
}
