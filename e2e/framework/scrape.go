package framework

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one sample of a scrape, as Prometheus stores it: a histogram
// or a summary is several samples (_bucket, _sum, _count, quantiles).
type Sample struct {
	// Name is the series' metric name, with the suffix of a histogram's
	// or summary's part: webchecker_probe_latency_seconds_bucket.
	Name string
	// Labels are the series' labels, le and quantile included; labels with
	// an empty value are left out, as Prometheus drops them.
	Labels map[string]string
	Value  float64
	// Counter is true for a counter and for the _bucket, _sum and _count
	// of a histogram or summary: values that only grow.
	Counter bool
}

// ScrapeSamples scrapes http://addr/metrics (the text format) and returns
// the samples of the metric families whose name starts with prefix.
func ScrapeSamples(ctx context.Context, addr, prefix string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", addr, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("scraping %s: %s: %s", addr, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s: %w", addr, err)
	}
	var out []Sample
	for name, f := range families {
		if strings.HasPrefix(name, prefix) {
			out = append(out, familySamples(f)...)
		}
	}
	return out, nil
}

// familySamples flattens a metric family into its samples.
func familySamples(f *dto.MetricFamily) []Sample {
	var out []Sample
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			if l.GetValue() != "" {
				labels[l.GetName()] = l.GetValue()
			}
		}
		with := func(name, value string) map[string]string {
			copied := make(map[string]string, len(labels)+1)
			for k, v := range labels {
				copied[k] = v
			}
			copied[name] = value
			return copied
		}
		name := f.GetName()
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			out = append(out, Sample{Name: name, Labels: labels, Value: m.GetCounter().GetValue(), Counter: true})
		case dto.MetricType_GAUGE:
			out = append(out, Sample{Name: name, Labels: labels, Value: m.GetGauge().GetValue()})
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			inf := false
			for _, b := range h.GetBucket() {
				inf = math.IsInf(b.GetUpperBound(), 1)
				le := model.FloatString(b.GetUpperBound()).String()
				out = append(out, Sample{Name: name + "_bucket", Labels: with("le", le), Value: float64(b.GetCumulativeCount()), Counter: true})
			}
			if !inf { // the text format has the +Inf bucket; protobuf leaves it out
				out = append(out, Sample{Name: name + "_bucket", Labels: with("le", "+Inf"), Value: float64(h.GetSampleCount()), Counter: true})
			}
			out = append(out,
				Sample{Name: name + "_sum", Labels: labels, Value: h.GetSampleSum(), Counter: true},
				Sample{Name: name + "_count", Labels: labels, Value: float64(h.GetSampleCount()), Counter: true})
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			for _, q := range s.GetQuantile() {
				out = append(out, Sample{Name: name, Labels: with("quantile", model.FloatString(q.GetQuantile()).String()), Value: q.GetValue()})
			}
			out = append(out,
				Sample{Name: name + "_sum", Labels: labels, Value: s.GetSampleSum(), Counter: true},
				Sample{Name: name + "_count", Labels: labels, Value: float64(s.GetSampleCount()), Counter: true})
		default: // untyped
			out = append(out, Sample{Name: name, Labels: labels, Value: m.GetUntyped().GetValue()})
		}
	}
	return out
}
