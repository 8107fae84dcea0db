package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chartDashboards is where the chart keeps the generated dashboards.
var chartDashboards = filepath.Join("..", "..", "..", "charts", "webchecker", "files", "dashboards")

// TestDashboardsAreValid decodes every generated dashboard strictly into the
// SDK's Dashboard type (unknown fields fail), validates it, and checks that
// every panel reads the datasource variable and has a query.
func TestDashboardsAreValid(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	files, err := Generate()
	require.NoError(t, err)
	require.Len(t, files, 3)
	uids := map[string]bool{}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			var strict dashboard.Dashboard
			require.NoError(t, strictError(strict.UnmarshalJSONStrict(data)), "the JSON is the SDK's dashboard schema: no unknown field, no required one null")
			var d dashboard.Dashboard
			require.NoError(t, json.Unmarshal(data, &d))
			require.NoError(t, d.Validate())
			again, err := json.MarshalIndent(d, "", "  ")
			require.NoError(t, err)
			assert.JSONEq(t, string(data), string(again), "decoding and encoding again changes nothing")

			require.NotNil(t, d.Uid)
			assert.False(t, uids[*d.Uid], "uid %s is unique", *d.Uid)
			uids[*d.Uid] = true

			// The generic form: what Grafana reads.
			var raw struct {
				Templating struct {
					List []map[string]any `json:"list"`
				} `json:"templating"`
				Panels []map[string]any `json:"panels"`
			}
			require.NoError(t, json.Unmarshal(data, &raw))
			var hasDatasourceVariable bool
			for _, v := range raw.Templating.List {
				if v["type"] == "datasource" && v["name"] == DatasourceVariable && v["query"] == "prometheus" {
					hasDatasourceVariable = true
				}
				if v["type"] == "query" {
					assert.Equal(t, map[string]any{"type": "prometheus", "uid": "${datasource}"}, v["datasource"], "variable %s", v["name"])
				}
			}
			assert.True(t, hasDatasourceVariable, "a Prometheus datasource variable named %s", DatasourceVariable)

			panels := 0
			for _, p := range raw.Panels {
				if p["type"] == "row" {
					continue
				}
				panels++
				title, _ := p["title"].(string)
				assert.NotEmpty(t, title)
				assert.Equal(t, map[string]any{"type": "prometheus", "uid": "${datasource}"}, p["datasource"], "panel %q reads the datasource variable", title)
				queries, _ := p["targets"].([]any)
				require.NotEmpty(t, queries, "panel %q has a query", title)
				for _, query := range queries {
					query := query.(map[string]any)
					assert.NotEmpty(t, query["expr"], "panel %q: every query has an expression", title)
					assert.Equal(t, map[string]any{"type": "prometheus", "uid": "${datasource}"}, query["datasource"], "panel %q: every query reads the datasource variable", title)
				}
			}
			assert.GreaterOrEqual(t, panels, 6)
		})
	}
}

// strictError is err, except that an empty cog.BuildErrors is nil: the
// SDK's strict decoder returns one for no error (and then stops decoding
// panels, which is why the round trip uses json.Unmarshal).
func strictError(err error) error {
	if errs, ok := err.(cog.BuildErrors); ok && len(errs) == 0 {
		return nil
	}
	return err
}

// TestCommittedDashboardsAreUpToDate fails when the chart's dashboards are
// not what the generator produces: run make dashboards.
func TestCommittedDashboardsAreUpToDate(t *testing.T) {
	files, err := Generate()
	require.NoError(t, err)
	assert.NoError(t, Check(chartDashboards, files))
}

// TestDriftCheck checks the check make verify runs (go run . -check): it
// passes on what the generator wrote and fails, naming the file, on every
// kind of drift, a generator change whose output was not written first.
func TestDriftCheck(t *testing.T) {
	tests := map[string]struct {
		drift   func(t *testing.T, dir string, files map[string][]byte)
		wantErr string
	}{
		"up to date": {drift: func(*testing.T, string, map[string][]byte) {}},
		"generator changed, output not regenerated": {
			drift: func(t *testing.T, _ string, files map[string][]byte) {
				d, err := fleet().Title("WebChecker / Fleet, renamed").Build()
				require.NoError(t, err)
				data, err := json.MarshalIndent(d, "", "  ")
				require.NoError(t, err)
				files["webchecker-fleet.json"] = append(data, '\n')
			},
			wantErr: "webchecker-fleet.json: differs from the generator's output",
		},
		"file edited by hand": {
			drift: func(t *testing.T, dir string, _ map[string][]byte) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "webchecker-operator.json"), []byte("{}\n"), 0o644))
			},
			wantErr: "webchecker-operator.json: differs",
		},
		"file missing": {
			drift: func(t *testing.T, dir string, _ map[string][]byte) {
				require.NoError(t, os.Remove(filepath.Join(dir, "webchecker-checker.json")))
			},
			wantErr: "webchecker-checker.json: missing",
		},
		"stale file": {
			drift: func(t *testing.T, dir string, _ map[string][]byte) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "old.json"), []byte("{}\n"), 0o644))
			},
			wantErr: "old.json: not produced by the generator",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, run(dir, false), "go run . -out dir")
			require.NoError(t, run(dir, true), "go run . -check -out dir, right after writing")
			files, err := Generate()
			require.NoError(t, err)
			tc.drift(t, dir, files)
			err = Check(dir, files)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Contains(t, err.Error(), "run make dashboards")
		})
	}
}

// TestWriteRemovesStaleDashboards: a dashboard dropped from the generator
// leaves the chart at the next make dashboards.
func TestWriteRemovesStaleDashboards(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.json"), []byte("{}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("kept\n"), 0o644))
	require.NoError(t, run(dir, false))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"README", "webchecker-checker.json", "webchecker-fleet.json", "webchecker-operator.json"}, names)
	assert.ErrorContains(t, run("", false), "-out is required")
}
