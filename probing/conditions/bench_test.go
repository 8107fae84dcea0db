package conditions_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/conditions"
)

// BenchmarkJudgeJSON judges a typical health response with a typical
// condition (one JSON parse per probe).
func BenchmarkJudgeJSON(b *testing.B) {
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{
		{Expression: "response.code == 200 && response.json.status == 'ok' && response.json.checks.all(c, c.healthy)"},
	})
	if err != nil {
		b.Fatal(err)
	}
	a := &probing.Answer{Kind: probing.KindHTTP, Latency: 30 * time.Millisecond, HTTP: &probing.HTTPAnswer{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`{"status":"ok","version":"1.4.2","uptime":123456,
			"checks":[{"name":"db","healthy":true,"latencyMs":3},{"name":"cache","healthy":true,"latencyMs":1},
			{"name":"queue","healthy":true,"latencyMs":7}]}`),
	}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, msg := j.Judge(ctx, a); !ok {
			b.Fatal(msg)
		}
	}
}

// BenchmarkJudgeStatus judges a condition that reads no body.
func BenchmarkJudgeStatus(b *testing.B) {
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{{Expression: "response.code == 200 && latency < duration('1s')"}})
	if err != nil {
		b.Fatal(err)
	}
	a := &probing.Answer{Kind: probing.KindHTTP, HTTP: &probing.HTTPAnswer{StatusCode: 200}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, msg := j.Judge(ctx, a); !ok {
			b.Fatal(msg)
		}
	}
}

// BenchmarkCompile compiles a typical list of conditions.
func BenchmarkCompile(b *testing.B) {
	conds := []conditions.Condition{
		{Expression: "response.code == 200"},
		{Expression: "response.json.status == 'ok'", Message: "not ok"},
		{Expression: "!has(tls.expiry) || tls.expiry - now > duration('336h')"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conditions.Compile(probing.KindHTTP, conds); err != nil {
			b.Fatal(err)
		}
	}
}
