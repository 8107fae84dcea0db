package probing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/networkio/webchecker/probing"
)

// BenchmarkKindProbe measures one probe through KindProber of a loopback
// TLS server trusted through a CA bundle, as https and as tls (connect and
// handshake only), each on a connection of its own: the prober's overhead
// per probe of the kinds whose setup (URL, kind, TLS configuration,
// transport) NewTarget works out once.
func BenchmarkKindProbe(b *testing.B) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	b.Cleanup(srv.Close)
	p := probing.NewProber(probing.ProberOptions{DNSServer: newDNS(b).Addr()})
	b.Cleanup(p.CloseIdleConnections)
	trust := probing.TLSOptions{RootCAs: serverCA(srv)}
	for _, tc := range []struct {
		name string
		spec probing.TargetSpec
	}{
		{"https", probing.TargetSpec{URL: srv.URL + "/", Method: http.MethodGet, Timeout: time.Second, TLS: trust}},
		{"tls", probing.TargetSpec{URL: "tls://" + srv.Listener.Addr().String(), Timeout: time.Second, TLS: trust}},
	} {
		target := mustTarget(b, tc.spec) // once, as the scheduler's checks are
		b.Run(tc.name, func(b *testing.B) {
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
