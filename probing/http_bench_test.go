package probing_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/networkio/webchecker/probing"
)

// BenchmarkHTTPProbe measures one probe of a loopback server over a kept-
// alive connection: the prober's own overhead per probe.
func BenchmarkHTTPProbe(b *testing.B) {
	srv := startServer(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	p := newProber(b, newDNS(b), probing.HTTPProberOptions{})
	target := probing.Target{URL: srv.URL + "/", Method: http.MethodGet, Timeout: time.Second, FollowRedirects: true}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r := p.Probe(context.Background(), target); !r.Success {
				b.Fatalf("probe failed: %+v", r)
			}
		}
	})
}
