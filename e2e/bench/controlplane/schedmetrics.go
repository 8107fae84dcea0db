package main

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/networkio/webchecker/e2e/bench/report"
)

// schedPrefix starts the names of the scheduler's series in a replica's
// /metrics.
const schedPrefix = "webchecker_scheduler_"

// bucket is one cumulative bucket of a histogram: the observations up to
// le.
type bucket struct {
	le, count float64
}

// schedSample is what one scrape of a replica said of its scheduler.
type schedSample struct {
	// lag is webchecker_scheduler_lag_seconds, its buckets in the order
	// of le.
	lag []bucket
	// inflight is webchecker_scheduler_inflight (probes running),
	// heldBytes _inflight_bytes, budget _memory_budget_bytes, workers
	// _workers, saturated _saturated.
	inflight, heldBytes, budget, workers, saturated float64
	// skipped is _skipped_turns_total, delayed _delayed_turns_total summed
	// over its reasons.
	skipped, delayed float64
}

// parseSched reads the scheduler's series from a text exposition,
// skipping every other line (a scrape holds a series per checker: far too
// many to parse whole).
func parseSched(r io.Reader) (schedSample, int64, error) {
	var s schedSample
	cr := &countingReader{r: r}
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, schedPrefix) {
			continue
		}
		name, labels, value, ok := splitSeries(line)
		if !ok {
			continue
		}
		switch name {
		case schedPrefix + "lag_seconds_bucket":
			le, err := strconv.ParseFloat(labelValue(labels, "le"), 64)
			if err == nil {
				s.lag = append(s.lag, bucket{le: le, count: value})
			}
		case schedPrefix + "inflight":
			s.inflight = value
		case schedPrefix + "inflight_bytes":
			s.heldBytes = value
		case schedPrefix + "memory_budget_bytes":
			s.budget = value
		case schedPrefix + "workers":
			s.workers = value
		case schedPrefix + "saturated":
			s.saturated = value
		case schedPrefix + "skipped_turns_total":
			s.skipped = value
		case schedPrefix + "delayed_turns_total":
			s.delayed += value
		}
	}
	slices.SortFunc(s.lag, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
	return s, cr.n, sc.Err()
}

// splitSeries splits a sample line `name{labels} value [timestamp]`.
func splitSeries(line string) (name, labels string, value float64, ok bool) {
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", "", 0, false
		}
		name, labels, rest = line[:i], line[i+1:j], line[j+1:]
	} else {
		var found bool
		name, rest, found = strings.Cut(line, " ")
		if !found {
			return "", "", 0, false
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return name, labels, v, err == nil
}

// labelValue returns the value of label name in labels (`a="x",b="y"`).
func labelValue(labels, name string) string {
	for _, pair := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if ok && strings.TrimSpace(k) == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lagSince returns the lag histogram's buckets observed between earlier
// and s.
func (s schedSample) lagSince(earlier schedSample) []bucket {
	out := make([]bucket, 0, len(s.lag))
	for _, b := range s.lag {
		before := 0.0
		for _, e := range earlier.lag {
			if e.le == b.le {
				before = e.count
			}
		}
		out = append(out, bucket{le: b.le, count: b.count - before})
	}
	return out
}

// quantile estimates the q-quantile of cumulative buckets as Prometheus's
// histogram_quantile does: linear within the bucket the rank falls in;
// the largest finite bound when it falls in +Inf. It returns NaN without
// observations.
func quantile(q float64, buckets []bucket) float64 {
	if len(buckets) == 0 || buckets[len(buckets)-1].count <= 0 {
		return math.NaN()
	}
	rank := q * buckets[len(buckets)-1].count
	lower, below := 0.0, 0.0
	for _, b := range buckets {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return lower
			}
			if b.count == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return lower
}

// schedWindow is what the scrapes of one replica said over a window.
type schedWindow struct {
	first, last schedSample
	// samples counts the scrapes; the sums and maxima are over them.
	samples                       int
	inflightSum, inflightMax      float64
	heldBytesMax, saturatedScrape float64
}

// add records a scrape.
func (w *schedWindow) add(s schedSample) {
	if w.samples == 0 {
		w.first = s
	}
	w.last = s
	w.samples++
	w.inflightSum += s.inflight
	w.inflightMax = max(w.inflightMax, s.inflight)
	w.heldBytesMax = max(w.heldBytesMax, s.heldBytes)
	w.saturatedScrape += s.saturated
}

// rows are the replica's scheduler figures over the window.
func (w *schedWindow) rows(id string) []report.Row {
	lag := w.last.lagSince(w.first)
	probes := 0.0
	if len(lag) > 0 {
		probes = lag[len(lag)-1].count
	}
	ms := func(q float64) float64 {
		v := quantile(q, lag)
		if math.IsNaN(v) {
			return 0
		}
		return v * 1000
	}
	mean := 0.0
	if w.samples > 0 {
		mean = w.inflightSum / float64(w.samples)
	}
	return []report.Row{
		{Name: id + " scheduler lag p50", Value: ms(0.5), Unit: "ms"},
		{Name: id + " scheduler lag p99", Value: ms(0.99), Unit: "ms"},
		{Name: id + " probes started (lag observations)", Value: probes, Unit: "probes"},
		{Name: id + " probes in flight, mean of scrapes", Value: mean, Unit: "probes"},
		{Name: id + " probes in flight, most at a scrape", Value: w.inflightMax, Unit: "probes"},
		{Name: id + " bytes in flight, most at a scrape", Value: w.heldBytesMax / mib, Unit: "MiB"},
		{Name: id + " memory budget of probes in flight", Value: w.last.budget / mib, Unit: "MiB"},
		{Name: id + " workers bound (0: memory budget only)", Value: w.last.workers, Unit: "workers"},
		{Name: id + " scrapes that found it saturated", Value: w.saturatedScrape, Unit: "scrapes"},
		{Name: id + " skipped turns", Value: w.last.skipped - w.first.skipped, Unit: "turns"},
		{Name: id + " delayed turns", Value: w.last.delayed - w.first.delayed, Unit: "turns"},
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
