package probing_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/networkio/webchecker/probing"
)

// BenchmarkHTTPProbe measures one probe of a loopback server, over a
// connection of its own (the default) and over a kept-alive one
// (ReuseConnections): the prober's own overhead per probe.
func BenchmarkHTTPProbe(b *testing.B) {
	srv := startServer(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	p := newProber(b, newDNS(b), probing.ProberOptions{})
	for _, reuse := range []bool{false, true} {
		b.Run("reuseConnections="+strconv.FormatBool(reuse), func(b *testing.B) {
			// Built once, as the scheduler's checks are: the figures are
			// the probe's alone.
			target := mustTarget(b, probing.TargetSpec{URL: srv.URL + "/", Method: http.MethodGet, Timeout: time.Second, FollowRedirects: true, ReuseConnections: reuse})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if r := p.Probe(context.Background(), target); !r.Success {
						b.Fatalf("probe failed: %+v", r)
					}
				}
			})
		})
	}
}
