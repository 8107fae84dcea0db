package main

import (
	"bytes"
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// apiCounts are the API server's own request counters at one instant.
type apiCounts struct {
	// requests counts every request (apiserver_request_total).
	requests float64
	// statusWrites counts the writes of the WebCheckers' status
	// subresource (verb PATCH, APPLY or UPDATE).
	statusWrites float64
}

// sub returns c - earlier.
func (c apiCounts) sub(earlier apiCounts) apiCounts {
	return apiCounts{requests: c.requests - earlier.requests, statusWrites: c.statusWrites - earlier.statusWrites}
}

// readAPICounts scrapes the API server's /metrics through the admin
// client.
func (e *env) readAPICounts(ctx context.Context) (apiCounts, error) {
	raw, err := e.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiCounts{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseAPICounts(raw)
}

// parseAPICounts sums apiserver_request_total in the text exposition
// format.
func parseAPICounts(raw []byte) (apiCounts, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return apiCounts{}, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	family, ok := families["apiserver_request_total"]
	if !ok {
		return apiCounts{}, fmt.Errorf("no apiserver_request_total in the API server's metrics")
	}
	var c apiCounts
	for _, m := range family.GetMetric() {
		v := m.GetCounter().GetValue()
		c.requests += v
		if isStatusWrite(m.GetLabel()) {
			c.statusWrites += v
		}
	}
	return c, nil
}

// isStatusWrite tells whether a series counts writes of the status of
// WebCheckers.
func isStatusWrite(labels []*dto.LabelPair) bool {
	l := map[string]string{}
	for _, p := range labels {
		l[p.GetName()] = p.GetValue()
	}
	switch l["verb"] {
	case "PATCH", "APPLY", "UPDATE":
	default:
		return false
	}
	return l["resource"] == "webcheckers" && l["subresource"] == "status"
}
