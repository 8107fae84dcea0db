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
	// leaseFlow counts the requests API Priority and Fairness dispatched
	// through the replicas' Lease FlowSchema (leaseFlowSchema).
	leaseFlow float64
	// rejected counts the requests API Priority and Fairness rejected
	// (HTTP 429), whatever their priority level.
	rejected float64
}

// sub returns c - earlier.
func (c apiCounts) sub(earlier apiCounts) apiCounts {
	return apiCounts{
		requests:     c.requests - earlier.requests,
		statusWrites: c.statusWrites - earlier.statusWrites,
		leaseFlow:    c.leaseFlow - earlier.leaseFlow,
		rejected:     c.rejected - earlier.rejected,
	}
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

// parseAPICounts sums apiserver_request_total and API Priority and
// Fairness's dispatched and rejected requests in the text exposition
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
	for _, m := range families["apiserver_flowcontrol_dispatched_requests_total"].GetMetric() {
		if labelsOf(m.GetLabel())["flow_schema"] == leaseFlowSchema {
			c.leaseFlow += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["apiserver_flowcontrol_rejected_requests_total"].GetMetric() {
		c.rejected += m.GetCounter().GetValue()
	}
	return c, nil
}

// labelsOf returns a series' labels by name.
func labelsOf(labels []*dto.LabelPair) map[string]string {
	l := make(map[string]string, len(labels))
	for _, p := range labels {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// isStatusWrite tells whether a series counts writes of the status of
// WebCheckers.
func isStatusWrite(labels []*dto.LabelPair) bool {
	l := labelsOf(labels)
	switch l["verb"] {
	case "PATCH", "APPLY", "UPDATE":
	default:
		return false
	}
	return l["resource"] == "webcheckers" && l["subresource"] == "status"
}
