package main

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// DatasourceVariable is the name of the template variable every panel and
// query reads its datasource from.
const DatasourceVariable = "datasource"

// datasourceRef refers to the datasource the user picked in the
// ${datasource} variable.
func datasourceRef() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + DatasourceVariable + "}")}
}

// datasourceVariable lets the user pick any Prometheus datasource.
func datasourceVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder(DatasourceVariable).Label("Data source").Type("prometheus")
}

// labelVariable is a template variable holding the values of label in the
// series of selector, e.g. label_values(webchecker_probe_success, namespace).
func labelVariable(name, label, selector string, multi bool) *dashboard.QueryVariableBuilder {
	query := fmt.Sprintf("label_values(%s, %s)", selector, label)
	v := dashboard.NewQueryVariableBuilder(name).
		Label(name).
		Datasource(datasourceRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc)
	if multi {
		v = v.Multi(true).IncludeAll(true).AllValue(".*")
	}
	return v
}

// q is one Prometheus query of a panel; refIDs are set by the panel.
type q struct {
	expr   string
	legend string
}

// targets builds the panel's queries, each with the datasource variable,
// as range queries (instant ones for tables).
func targets(instant bool, queries []q) []cog.Builder[variants.Dataquery] {
	var out []cog.Builder[variants.Dataquery]
	for i, query := range queries {
		b := prometheus.NewDataqueryBuilder().
			Datasource(datasourceRef()).
			RefId(string(rune('A' + i))).
			Expr(query.expr)
		if query.legend != "" {
			b = b.LegendFormat(query.legend)
		}
		if instant {
			b = b.Instant().Format(prometheus.PromQueryFormatTable)
		} else {
			b = b.Range()
		}
		out = append(out, b)
	}
	return out
}

// timeseriesPanel is a graph of queries over the dashboard's time range.
func timeseriesPanel(title, description, unit string, queries ...q) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		Targets(targets(false, queries)).
		Unit(unit).
		Height(8).Span(12).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever)
}

// statPanel shows the latest value of one query.
func statPanel(title, description, unit string, query q, thresholds *dashboard.ThresholdsConfigBuilder) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		Targets(targets(false, []q{query})).
		Unit(unit).
		Height(4).Span(4).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
	if thresholds != nil {
		p = p.Thresholds(thresholds)
	}
	return p
}

// tablePanel lists the series of an instant query, one row each.
func tablePanel(title, description, unit string, query q) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		Targets(targets(true, []q{query})).
		Unit(unit).
		Height(8).Span(12).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"})).
		// One row per series: drop Grafana's Time column.
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true},
		}})
}

// step is a threshold: from value upwards, values are coloured color.
type step struct {
	value float64
	color string
}

// thresholds colours values below the first step base, and from each
// step's value upwards its colour; steps are in ascending order.
func thresholds(base string, steps ...step) *dashboard.ThresholdsConfigBuilder {
	list := []dashboard.Threshold{{Color: base}}
	for _, s := range steps {
		list = append(list, dashboard.Threshold{Value: cog.ToPtr(s.value), Color: s.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(list)
}

// Units the panels use.
const (
	unitSeconds = units.Seconds
	unitRatio   = units.PercentUnit
	unitShort   = units.Short
	unitPerSec  = "ops"
)
