package metrics

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Exposition serves the manager's /metrics: the registry's series, then
// the per-checker ones written straight in the text exposition format
// (text/plain; version=0.0.4), which every Prometheus scrapes. A replica
// that probes thousands of checkers exports tens of thousands of series;
// gathering them through a registry would hold all of them in memory, as
// protocol buffer messages, for every scrape.
//
// Its zero value serves the registry's series alone, until
// Metrics.RegisterStreamed gives it the per-checker ones.
type Exposition struct {
	checkers atomic.Pointer[checkerCollector]
}

// NewExposition returns an Exposition with no per-checker series yet.
func NewExposition() *Exposition { return &Exposition{} }

// gzipWriters are reused from scrape to scrape: a gzip.Writer holds
// several hundred KiB of compression state.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// textContentType is the content type of the text exposition format.
const textContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler returns the /metrics handler: registry is the handler of the
// registry's series (promhttp's, as controller-runtime's metrics server
// builds it). It asks registry for the text format, uncompressed, and
// serves its answer followed by the per-checker series, gzip-compressed
// when the client accepts it. An answer of registry other than 200 is
// served as it is.
func (e *Exposition) Handler(registry http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner := r.Clone(r.Context())
		inner.Header.Set("Accept", textContentType)
		inner.Header.Del("Accept-Encoding")
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		registry.ServeHTTP(rec, inner)
		if rec.status != http.StatusOK {
			maps.Copy(w.Header(), rec.header)
			w.WriteHeader(rec.status)
			_, _ = w.Write(rec.body.Bytes())
			return
		}

		w.Header().Set("Content-Type", textContentType)
		var out io.Writer = w
		if acceptsGzip(r) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
			gz := gzipWriters.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() {
				_ = gz.Close()
				gzipWriters.Put(gz)
			}()
			out = gz
		}
		if _, err := out.Write(rec.body.Bytes()); err != nil {
			return // the client went away
		}
		_ = e.WriteText(out)
	})
}

// WriteText writes the per-checker series in the text exposition format
// (nothing before Metrics.RegisterStreamed).
func (e *Exposition) WriteText(w io.Writer) error {
	c := e.checkers.Load()
	if c == nil {
		return nil
	}
	return c.writeText(w)
}

// writeText writes every family of c with at least one series, each with
// its HELP and TYPE lines, as expfmt writes the text format.
func (c *checkerCollector) writeText(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 32<<10)
	s := c.scrape()
	var line []byte
	for _, f := range c.families {
		header := false
		f.each(s, func(labelValues []string, v float64) {
			if !header {
				line = appendHeader(line[:0], f)
				_, _ = bw.Write(line)
				header = true
			}
			line = appendSample(line[:0], f, labelValues, v)
			_, _ = bw.Write(line)
		})
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the per-checker metrics: %w", err)
	}
	return nil
}

// appendHeader appends the HELP and TYPE lines of f.
func appendHeader(b []byte, f checkerFamily) []byte {
	b = append(b, "# HELP "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = append(b, helpEscaper.Replace(f.help)...)
	b = append(b, "\n# TYPE "...)
	b = append(b, f.name...)
	switch f.valueType {
	case prometheus.CounterValue:
		b = append(b, " counter\n"...)
	default:
		b = append(b, " gauge\n"...)
	}
	return b
}

// appendSample appends one sample line of f.
func appendSample(b []byte, f checkerFamily, labelValues []string, v float64) []byte {
	b = append(b, f.name...)
	if len(f.labels) > 0 {
		b = append(b, '{')
		for n, i := range f.sorted {
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, f.labels[i]...)
			b = append(b, `="`...)
			b = appendLabelValue(b, labelValues[i])
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, v)
	return append(b, '\n')
}

var (
	// helpEscaper escapes a HELP text (backslash and line feed).
	helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	// labelValueEscaper escapes a label value (and the double quote).
	labelValueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// appendLabelValue appends v escaped; most values need no escaping and
// are appended as they are.
func appendLabelValue(b []byte, v string) []byte {
	if !strings.ContainsAny(v, "\\\n\"") {
		return append(b, v...)
	}
	return append(b, labelValueEscaper.Replace(v)...)
}

// appendFloat appends v as the text format writes sample values (the
// commonest values without formatting).
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 1:
		return append(b, '1')
	case v == 0:
		return append(b, '0')
	case v == -1:
		return append(b, "-1"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64) // NaN, +Inf and -Inf as the format spells them
}

// acceptsGzip reports whether r's Accept-Encoding allows gzip: it names
// gzip without a quality of zero.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
			if !ok {
				return true
			}
			if quality, err := strconv.ParseFloat(q, 64); err == nil && quality > 0 {
				return true
			}
		}
	}
	return false
}

// recorder is the http.ResponseWriter the registry's handler writes to.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }
