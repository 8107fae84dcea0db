package conditions_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/conditions"
)

// answers are an answer of every kind, for the fuzz targets.
func answers(body []byte) map[probing.Kind]*probing.Answer {
	tls := &probing.TLSAnswer{Version: "1.3", Expiry: time.Unix(2_000_000_000, 0), Subject: "CN=a", Issuer: "CN=b", DNSNames: []string{"a"}}
	return map[probing.Kind]*probing.Answer{
		probing.KindHTTP: {Kind: probing.KindHTTP, Latency: time.Millisecond, TLS: tls, HTTP: &probing.HTTPAnswer{
			StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: body,
		}},
		probing.KindTCP:  {Kind: probing.KindTCP, TCP: &probing.TCPAnswer{Reply: body}},
		probing.KindTLS:  {Kind: probing.KindTLS, TLS: tls, TCP: &probing.TCPAnswer{Reply: body}},
		probing.KindGRPC: {Kind: probing.KindGRPC, GRPC: &probing.GRPCAnswer{Status: "SERVING"}},
		probing.KindDNS:  {Kind: probing.KindDNS, DNS: &probing.DNSAnswer{Rcode: "NOERROR", Answers: []string{"a. 1 IN A 127.0.0.1"}}},
	}
}

// FuzzCompile compiles arbitrary expressions for every kind and judges
// an answer with those that compile: neither may panic, errors are
// *CompileError on one bounded line, messages are bounded and stable.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"response.code == 200",
		"response.json.items.exists(i, i.name == 'a')",
		"has(response.json.x) && response.json.x > 2",
		"response.headers[?'x'].orValue('') == ''",
		"tls.expiry - now > duration('336h')",
		"dns.answers.exists(a, a.endsWith('127.0.0.1'))",
		"grpc.status == 'SERVING'",
		"reply.matches('^\\\\+OK')",
		"cel.bind(x, latency, x < duration('1s'))",
		"response.body.replace('', 'x').size() > 0",
		"response.body.split(',').join('-') == ''",
		"'abc'.indexOf('c', 1) == 2 && 'abc'.lastIndexOf('a', 0) == 0",
		"webchecker.Response{} == response",
		"google.protobuf.Duration{seconds: 1} == duration('1s')",
		"[1, 2, 3].map(x, x * 2).filter(y, y > 2).size() == 2",
		"{'a': 1}.all(k, v, v == 1)",
		"type(response) == type(tls)",
		"dyn(response).json.a == 1",
		"response.json.?a.?b.orValue(0) == 0",
		"1 / 0 == 1",
		"'\\xff' == ''",
		"((((((((((true))))))))))",
		"response.",
		"",
		"\x00",
	} {
		f.Add(seed)
	}
	body := []byte(`{"items":[{"name":"a"}],"x":3}`)
	f.Fuzz(func(t *testing.T, expr string) {
		for kind, a := range answers(body) {
			j, err := conditions.Compile(kind, []conditions.Condition{{Expression: expr}})
			if err != nil {
				var ce *conditions.CompileError
				if !errors.As(err, &ce) {
					t.Fatalf("%s: %q: not a CompileError: %v", kind, expr, err)
				}
				if strings.Contains(ce.Reason, "\n") || len(ce.Reason) > 512 {
					t.Fatalf("%s: %q: reason not one bounded line: %q", kind, expr, ce.Reason)
				}
				continue
			}
			ok, msg := j.Judge(context.Background(), a)
			checkMessage(t, ok, msg)
		}
	})
}

// FuzzJudge judges arbitrary bodies with conditions reading them: no
// panic, bounded messages, the same judgement twice.
func FuzzJudge(f *testing.F) {
	for _, seed := range []string{
		`{"status":"ok","count":3,"items":[{"healthy":true}]}`,
		`{"status":"down"}`,
		`{"count":"3"}`,
		`[1,2,3]`,
		`null`,
		`<html>ok</html>`,
		"{\"status\":\"ok\xff\"}",
		`{"items":[[[[[[[[[[[]]]]]]]]]]]}`,
		`1e999`,
		``,
	} {
		f.Add([]byte(seed))
	}
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{
		{Expression: "response.body.size() < 100000"},
		{Expression: "!has(response.json) || type(response.json) != map || !has(response.json.count) || response.json.count >= 0"},
		{Expression: "response.json.status == 'ok'", Message: "not ok"},
		{Expression: "response.json.items.all(i, i.healthy)"},
		{Expression: "response.body.matches('^[{\\\\[]')"},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a := answers(body)[probing.KindHTTP]
		ok, msg := j.Judge(context.Background(), a)
		checkMessage(t, ok, msg)
		ok2, msg2 := j.Judge(context.Background(), a)
		if ok != ok2 || msg != msg2 {
			t.Fatalf("judged %v %q, then %v %q", ok, msg, ok2, msg2)
		}
	})
}

func checkMessage(t *testing.T, ok bool, msg string) {
	t.Helper()
	switch {
	case ok && msg != "":
		t.Fatalf("a message for a success: %q", msg)
	case !ok && msg == "":
		t.Fatal("no message for a failure")
	case len(msg) > probing.MaxMessageBytes || !utf8.ValidString(msg):
		t.Fatalf("message not bounded: %q", msg)
	}
}
