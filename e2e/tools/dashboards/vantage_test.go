package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probeSeries matches the per-checker probe series, which every vantage
// point of a checker exports (labels shard and zone).
var probeSeries = regexp.MustCompile(`webchecker_(probe_success|probe_duration_seconds|probe_http_status_code|probe_last_run_timestamp_seconds|probe_ssl_earliest_cert_expiry|probes_total)\b`)

// aggregation matches a PromQL aggregation (with or without by).
var aggregation = regexp.MustCompile(`\b(sum|max|min|count|avg)( by \([a-z_, ]+\))? ?\(`)

// dashboardQuery is one query of a panel of a generated dashboard.
type dashboardQuery struct {
	panel, panelType, expr, legend string
}

// dashboardQueries returns every query of the generated dashboard file.
func dashboardQueries(t *testing.T, file string) []dashboardQuery {
	t.Helper()
	files, err := Generate()
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(files[file], &d))
	var out []dashboardQuery
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			out = append(out, dashboardQuery{panel: p.Title, panelType: p.Type, expr: target.Expr, legend: target.LegendFormat})
		}
	}
	return out
}

// TestDashboardsHandleVantagePoints checks the dashboards against checkers
// with several vantage points: no query shows a probe series raw (one
// series per vantage point, and per replica across moves), a graph that
// keeps the vantage points (by shard and zone) names them in its legend,
// and up and down are the quorum state, webchecker_ready.
func TestDashboardsHandleVantagePoints(t *testing.T) {
	for _, file := range []string{"webchecker-checker.json", "webchecker-fleet.json"} {
		t.Run(file, func(t *testing.T) {
			var ready, perVantagePoint int
			for _, query := range dashboardQueries(t, file) {
				if strings.Contains(query.expr, "webchecker_ready") {
					ready++
				}
				series := len(probeSeries.FindAllString(query.expr, -1))
				assert.GreaterOrEqual(t, len(aggregation.FindAllString(query.expr, -1)), series,
					"panel %q aggregates every probe series it reads over the vantage points: %s", query.panel, query.expr)
				if query.panelType == "timeseries" && strings.Contains(query.expr, "by (shard, zone)") {
					perVantagePoint++
					assert.Equal(t, "{{shard}} {{zone}}", query.legend, "panel %q: one legend per vantage point", query.panel)
				}
			}
			assert.Positive(t, ready, "up and down read the quorum state")
			if file == "webchecker-checker.json" {
				assert.GreaterOrEqual(t, perVantagePoint, 4, "success, transitions, latency and status code by vantage point")
			}
		})
	}
}
