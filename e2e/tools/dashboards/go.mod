// Module dashboards generates the chart's Grafana dashboards from Go with
// the Grafana Foundation SDK. It is a module of its own so that the SDK stays
// out of the project module's dependencies; `make dashboards` runs it.
module github.com/networkio/webchecker/e2e/tools/dashboards

go 1.26.0

require github.com/grafana/grafana-foundation-sdk/go v0.0.22

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
