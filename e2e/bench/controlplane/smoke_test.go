package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/bench/report"
	"github.com/networkio/webchecker/e2e/framework"
)

// smokeCase is one profile's smoke run and what its report must hold.
type smokeCase struct {
	profile string
	// name is the report's, size the checkers, failing those whose Ready
	// is False from the start, https and hang the checkers of those kinds.
	name                       string
	size, failing, https, hang int
	// interval is the smoke's spec.interval, in seconds.
	interval float64
	// sections follow the flip.
	sections []string
}

// TestSmoke runs the program at the smoke size of each profile, every
// phase included, and checks that the report has every section with
// plausible figures. It checks what the bench measured, not whether the
// goals were met. The replicas run as a ServiceAccount bound to the
// generated RBAC rules alone, so each run also proves that they suffice
// through a hand-over or the failure sequence.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and three managers")
	}
	manager, err := framework.ManagerBinary(t.TempDir())
	require.NoError(t, err)
	tests := map[string]smokeCase{
		"instant": {profile: profileInstant, name: "controlplane-3x2s", size: 30, failing: 2, interval: 2,
			sections: []string{"hand-over"}},
		"realistic": {profile: profileRealistic, name: "controlplane-realistic-3x3s", size: 60, failing: 4, https: 12, hang: 1, interval: 3,
			sections: failureSections},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep, stdout := runSmoke(t, manager, tc.profile)
			assert.Equal(t, tc.name, rep.Bench)
			assert.Equal(t, tc.profile, rep.Params["profile"])
			assert.Equal(t, "5s", rep.Params["leaseDuration"])
			assert.Equal(t, "1s", rep.Params["leaseRenewInterval"])
			assert.True(t, strings.HasPrefix(stdout, "# "+tc.name+" bench"))
			rows := func(section string) map[string]report.Row {
				return sectionRows(t, rep, fmt.Sprintf("%d checkers: %s", tc.size, section), stdout)
			}
			checkConvergence(t, tc, rows("creation and first status"))
			checkWindow(t, rows("steady window"), []string{"replica-a", "replica-b", "replica-c"}, nil)
			checkFlip(t, rows("flip"))
			if tc.profile == profileInstant {
				checkStops(t, rows("hand-over"), "SIGTERM", "SIGKILL")
			} else {
				checkFailures(t, rows)
			}
			correct := rows("correctness and run")
			assert.Zero(t, correct["requests for no checker's path"].Value)
			assert.Contains(t, correct, "double probes (< interval/2 apart), whole run")
			// The replicas run as their ServiceAccount: the FlowSchema
			// took their Lease requests.
			assert.Positive(t, correct["Lease requests in the leader-election priority level, whole run"].Value)
			for _, s := range tc.sections {
				assert.Contains(t, stdout, fmt.Sprintf("## %d checkers: %s", tc.size, s))
			}
		})
	}
}

// runSmoke runs the bench with --smoke and profile and returns its
// report and its table.
func runSmoke(t *testing.T, manager, profile string) (report.Report, string) {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	path, err := run(ctx, []string{"--smoke", "--profile", profile, "--manager", manager, "--out", out}, &stdout, &stderr)
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(data, &rep))
	return rep, stdout.String()
}

// sectionRows returns the rows of the section titled title by name, and
// fails the test when there is none.
func sectionRows(t *testing.T, rep report.Report, title, stdout string) map[string]report.Row {
	t.Helper()
	for _, s := range rep.Sections {
		if s.Title == title {
			byName := map[string]report.Row{}
			for _, r := range s.Rows {
				byName[r.Name] = r
			}
			return byName
		}
	}
	require.Failf(t, "missing section", "%q in\n%s", title, stdout)
	return nil
}

func checkConvergence(t *testing.T, tc smokeCase, created map[string]report.Row) {
	t.Helper()
	assert.Equal(t, float64(tc.size), created["checkers"].Value)
	assert.Equal(t, float64(tc.failing), created["failing from the start"].Value)
	assert.Equal(t, float64(tc.https), created["over https"].Value)
	assert.Equal(t, float64(tc.hang), created["at a path that never answers"].Value)
	assert.Positive(t, created["creation"].Value)
	first, last := created["all Ready reflect the targets, after the first create"].Value, created["all Ready reflect the targets, after the last create"].Value
	assert.Positive(t, first)
	assert.GreaterOrEqual(t, first, last)
}

// checkWindow checks a measured window's rows: the live replicas' and
// none of the gone ones'.
func checkWindow(t *testing.T, w map[string]report.Row, live, gone []string) {
	t.Helper()
	assert.GreaterOrEqual(t, w["window"].Value, 3.0)
	assert.Positive(t, w["API requests"].Value, "replicas renew their Leases")
	assert.Positive(t, w["probes at the targets"].Value)
	assert.Contains(t, w, "status writes per minute (API server)")
	assert.Positive(t, w["kube-apiserver CPU"].Value, "the replicas renew their Leases")
	for _, name := range controlPlaneProcs {
		assert.Contains(t, w, name+" CPU", name)
		assert.Greater(t, w[name+" RSS (most in the window)"].Value, 1.0, name)
	}
	for _, id := range live {
		assert.Greater(t, w[id+" RSS (most in the window)"].Value, 1.0, id)
		assert.Greater(t, w[id+" peak RSS (VmHWM, since start)"].Value, 1.0, id)
		assert.Contains(t, w, id+" CPU per probe")
		assert.GreaterOrEqual(t, w[id+" scrapes"].Value, 2.0, id)
		assert.Positive(t, w[id+" probes started (lag observations)"].Value, id)
		assert.Positive(t, w[id+" scheduler lag p99"].Value, id)
		assert.GreaterOrEqual(t, w[id+" scheduler lag p99"].Value, w[id+" scheduler lag p50"].Value, id)
		assert.Positive(t, w[id+" memory budget of probes in flight"].Value, id)
		assert.Contains(t, w, id+" probes in flight, most at a scrape")
		assert.Contains(t, w, id+" skipped turns")
	}
	for _, id := range gone {
		assert.NotContains(t, w, id+" CPU", id)
		assert.NotContains(t, w, id+" scrapes", id)
	}
}

func checkFlip(t *testing.T, flip map[string]report.Row) {
	t.Helper()
	n := flip["flipped checkers"].Value
	assert.GreaterOrEqual(t, n, 2.0)
	assert.Positive(t, flip["until all show False"].Value)
	assert.GreaterOrEqual(t, flip["status writes (watch MODIFIED)"].Value, n, "every flipped checker was written")
	assert.GreaterOrEqual(t, flip["status writes (API server)"].Value, n, "every flipped checker was written")
}

// checkStops checks the gaps after each way of stopping a replica.
func checkStops(t *testing.T, rows map[string]report.Row, hows ...string) {
	t.Helper()
	for _, how := range hows {
		assert.Positive(t, rows[how+": checkers of the replica"].Value, how)
		gap := rows[how+": longest probe gap"].Value
		assert.Positive(t, gap, how)
		assert.Less(t, gap, 30.0, how)
		assert.NotNil(t, rows[how+": longest probe gap"].Met, how)
	}
}

// checkFailures checks every section of the failure sequence.
func checkFailures(t *testing.T, rows func(string) map[string]report.Row) {
	t.Helper()
	every := []string{"replica-a", "replica-b", "replica-c"}
	for i, how := range []string{"partition", "SIGSTOP"} {
		w := rows(failureSections[i])
		checkStops(t, w, how)
		assert.NotContains(t, w, how+": until the process was gone", "the process goes on")
		assert.Positive(t, w[how+": back until its renewed Lease was seen"].Value, how)
		assert.Contains(t, w, how+": its probes received once back, before its renewal began", how)
	}
	checkStops(t, rows(failureSections[2]), "SIGKILL")
	checkStops(t, rows(failureSections[3]), "SIGTERM")
	for _, s := range []struct {
		section, prefix string
		live, gone      []string
	}{
		{failureSections[0], "every checker (every replica), since after partition: ", every, nil},
		{failureSections[1], "every checker (every replica), since after SIGSTOP: ", every, nil},
		{failureSections[4], "every checker (remaining replicas), since after SIGTERM: ", []string{"replica-c"}, []string{"replica-a", "replica-b"}},
		{failureSections[5], "every checker (every replica), since after the restart: ", every, nil},
	} {
		w := rows(s.section)
		gap := w[s.prefix+"longest probe gap"]
		assert.Positive(t, gap.Value, s.section)
		assert.Less(t, gap.Value, 30.0, s.section)
		assert.NotNil(t, gap.Met, s.section)
		assert.GreaterOrEqual(t, gap.Value, w[s.prefix+"probe gap, median checker"].Value, s.section)
		assert.Contains(t, w, s.prefix+"checkers with a longer gap", s.section)
		checkWindow(t, w, s.live, s.gone)
	}
	assert.Positive(t, rows(failureSections[5])["restart until both replicas were ready"].Value)
}
