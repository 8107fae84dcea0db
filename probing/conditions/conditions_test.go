package conditions_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/conditions"
)

const jsonBody = `{"status":"ok","count":3,"ratio":0.5,"ok":true,"nothing":null,
	"nested":{"db":{"state":"up","replicas":[1,2,3]}},
	"items":[{"name":"a","healthy":true},{"name":"b","healthy":false}],
	"big":9007199254740993}`

func httpAnswer(code int, body string) *probing.Answer {
	return &probing.Answer{
		Kind:    probing.KindHTTP,
		Latency: 120 * time.Millisecond,
		HTTP: &probing.HTTPAnswer{
			StatusCode: code,
			Header: http.Header{
				"Content-Type": {"application/json"},
				"X-Multi":      {"one", "two"},
				"Invalid":      {"a\xffb"},
			},
			Body: []byte(body),
		},
	}
}

func tlsAnswer(expiry time.Time) *probing.TLSAnswer {
	return &probing.TLSAnswer{
		Version: "1.3", Expiry: expiry,
		Subject: "CN=healthy.test", Issuer: "CN=Test CA,O=Webchecker",
		DNSNames: []string{"healthy.test", "www.healthy.test"},
	}
}

// judgeCase is a condition and what judging an answer with it gives:
// ok, or the message.
type judgeCase struct {
	kind   probing.Kind
	expr   string
	answer *probing.Answer
	ok     bool
	msg    string
}

func runJudgeCases(t *testing.T, cases map[string]judgeCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kind := tc.kind
			if kind == "" {
				kind = probing.KindHTTP
			}
			j, err := conditions.Compile(kind, []conditions.Condition{{Expression: tc.expr}})
			require.NoError(t, err)
			ok, msg := j.Judge(context.Background(), tc.answer)
			assert.Equal(t, tc.ok, ok, msg)
			if tc.ok {
				assert.Empty(t, msg)
			} else {
				assert.Equal(t, tc.msg, msg)
			}
		})
	}
}

func TestHTTPVariables(t *testing.T) {
	t.Parallel()
	a := httpAnswer(200, "all good\n")
	runJudgeCases(t, map[string]judgeCase{
		"code":                    {expr: "response.code == 200", answer: a, ok: true},
		"code in":                 {expr: "response.code in [200, 204]", answer: httpAnswer(204, ""), ok: true},
		"code false":              {expr: "response.code < 300", answer: httpAnswer(503, ""), msg: "condition 1 failed: response.code < 300"},
		"header lower-cased":      {expr: "response.headers['content-type'] == 'application/json'", answer: a, ok: true},
		"canonical name absent":   {expr: "!('Content-Type' in response.headers)", answer: a, ok: true},
		"values joined":           {expr: "response.headers['x-multi'] == 'one, two'", answer: a, ok: true},
		"invalid UTF-8 replaced":  {expr: "response.headers['invalid'] == 'a\\uFFFDb'", answer: a, ok: true},
		"missing header":          {expr: "response.headers['x-none'] == ''", answer: a, msg: `condition 1 ("response.headers['x-none'] == ''") could not be evaluated: no such key`},
		"optional header":         {expr: "response.headers[?'x-none'].orValue('') == ''", answer: a, ok: true},
		"body":                    {expr: "response.body.startsWith('all good')", answer: a, ok: true},
		"body contains":           {expr: "response.body.contains('bad')", answer: a, msg: "condition 1 failed: response.body.contains('bad')"},
		"body matches":            {expr: "response.body.matches('^all (good|fine)\\n$')", answer: a, ok: true},
		"body strings extension":  {expr: "response.body.trim().upperAscii().split(' ') == ['ALL', 'GOOD']", answer: a, ok: true},
		"latency":                 {expr: "latency < duration('1s') && latency > duration('100ms')", answer: a, ok: true},
		"response.latency":        {expr: "response.latency == latency", answer: a, ok: true},
		"latency too long":        {expr: "latency < duration('50ms')", answer: a, msg: "condition 1 failed: latency < duration('50ms')"},
		"now":                     {expr: "now > timestamp('2024-01-01T00:00:00Z') && now < timestamp('2200-01-01T00:00:00Z')", answer: a, ok: true},
		"two-variable all":        {expr: "response.headers.all(k, v, k == k.lowerAscii())", answer: a, ok: true},
		"cel.bind":                {expr: "cel.bind(c, response.code, c >= 200 && c < 300)", answer: a, ok: true},
		"no HTTP answer":          {expr: "response.code == 200", answer: &probing.Answer{Kind: probing.KindHTTP}, msg: `condition 1 ("response.code == 200") could not be evaluated: response.code is not set: the probe has no HTTP response`},
		"dyn select":              {expr: "dyn(response).code == 200", answer: a, ok: true},
		"dyn missing field":       {expr: "dyn(response).nope == 200", answer: a, msg: `condition 1 ("dyn(response).nope == 200") could not be evaluated: no such key`},
		"type of response":        {expr: "type(response) != type(1)", answer: a, ok: true},
		"response equals itself":  {expr: "response == response", answer: a, ok: true},
		"has on a fixed field":    {expr: "has(response.code)", answer: a, ok: true},
		"plain http has no tls":   {expr: "!has(tls.expiry) && !has(tls.version)", answer: a, ok: true},
		"plain http tls.expiry":   {expr: "tls.expiry > now", answer: a, msg: `condition 1 ("tls.expiry > now") could not be evaluated: tls.expiry is not set: the probe did not use TLS`},
		"either plain or expires": {expr: "!has(tls.expiry) || tls.expiry - now > duration('336h')", answer: a, ok: true},
	})
}

func TestTLSVariables(t *testing.T) {
	t.Parallel()
	soon := time.Now().Add(72 * time.Hour)
	later := time.Now().Add(90 * 24 * time.Hour)
	https := func(expiry time.Time) *probing.Answer {
		a := httpAnswer(200, "")
		a.TLS = tlsAnswer(expiry)
		return a
	}
	tlsProbe := &probing.Answer{Kind: probing.KindTLS, TLS: tlsAnswer(later), TCP: &probing.TCPAnswer{Reply: []byte("+PONG\r\n")}}
	grpcs := &probing.Answer{Kind: probing.KindGRPC, TLS: tlsAnswer(later), GRPC: &probing.GRPCAnswer{Status: "SERVING"}}
	grpcPlain := &probing.Answer{Kind: probing.KindGRPC, GRPC: &probing.GRPCAnswer{Status: "SERVING"}}
	const expiring = "tls.expiry - now > duration('336h')"
	runJudgeCases(t, map[string]judgeCase{
		"expiry far":         {expr: expiring, answer: https(later), ok: true},
		"expiry soon":        {expr: expiring, answer: https(soon), msg: "condition 1 failed: " + expiring},
		"has expiry":         {expr: "has(tls.expiry) && has(tls.dnsNames)", answer: https(later), ok: true},
		"version":            {expr: "tls.version == '1.3'", answer: https(later), ok: true},
		"version compare":    {expr: "tls.version in ['1.2', '1.3']", answer: https(later), ok: true},
		"subject":            {expr: "tls.subject == 'CN=healthy.test'", answer: https(later), ok: true},
		"issuer":             {expr: "tls.issuer.contains('O=Webchecker')", answer: https(later), ok: true},
		"dnsNames":           {expr: "'www.healthy.test' in tls.dnsNames && tls.dnsNames.size() == 2", answer: https(later), ok: true},
		"tls kind":           {kind: probing.KindTLS, expr: expiring + " && tls.version == '1.3'", answer: tlsProbe, ok: true},
		"tls kind reply":     {kind: probing.KindTLS, expr: "reply.startsWith('+PONG')", answer: tlsProbe, ok: true},
		"grpcs":              {kind: probing.KindGRPC, expr: expiring + " && grpc.status == 'SERVING'", answer: grpcs, ok: true},
		"plain grpc":         {kind: probing.KindGRPC, expr: "!has(tls.subject)", answer: grpcPlain, ok: true},
		"plain grpc subject": {kind: probing.KindGRPC, expr: "tls.subject != ''", answer: grpcPlain, msg: `condition 1 ("tls.subject != ''") could not be evaluated: tls.subject is not set: the probe did not use TLS`},
	})
}

func TestOtherKinds(t *testing.T) {
	t.Parallel()
	tcp := &probing.Answer{Kind: probing.KindTCP, Latency: 5 * time.Millisecond, TCP: &probing.TCPAnswer{Reply: []byte("SSH-2.0-OpenSSH_9.6\r\n")}}
	grpc := &probing.Answer{Kind: probing.KindGRPC, GRPC: &probing.GRPCAnswer{Status: "NOT_SERVING"}}
	dns := &probing.Answer{Kind: probing.KindDNS, DNS: &probing.DNSAnswer{
		Rcode:      "NOERROR",
		Answers:    []string{"healthy.test.\t300\tIN\tA\t10.0.0.1", "healthy.test.\t300\tIN\tA\t10.0.0.2"},
		Authority:  []string{"test.\t300\tIN\tNS\tns1.test."},
		Additional: []string{},
	}}
	runJudgeCases(t, map[string]judgeCase{
		"tcp reply":         {kind: probing.KindTCP, expr: "reply.startsWith('SSH-2.0-')", answer: tcp, ok: true},
		"tcp reply matches": {kind: probing.KindTCP, expr: "reply.matches('^SSH-2\\\\.0-OpenSSH_(8|9)')", answer: tcp, ok: true},
		"tcp latency":       {kind: probing.KindTCP, expr: "latency < duration('10ms')", answer: tcp, ok: true},
		"tcp no reply":      {kind: probing.KindTCP, expr: "reply == ''", answer: &probing.Answer{Kind: probing.KindTCP}, ok: true},
		"grpc status":       {kind: probing.KindGRPC, expr: "grpc.status == 'SERVING'", answer: grpc, msg: "condition 1 failed: grpc.status == 'SERVING'"},
		"grpc no answer":    {kind: probing.KindGRPC, expr: "grpc.status == 'SERVING'", answer: &probing.Answer{Kind: probing.KindGRPC}, msg: `condition 1 ("grpc.status == 'SERVING'") could not be evaluated: grpc.status is not set: the probe has no gRPC health check response`},
		"dns rcode":         {kind: probing.KindDNS, expr: "dns.rcode == 'NOERROR'", answer: dns, ok: true},
		"dns answers":       {kind: probing.KindDNS, expr: "dns.answers.exists(a, a.endsWith('10.0.0.1'))", answer: dns, ok: true},
		"dns answers all":   {kind: probing.KindDNS, expr: "dns.answers.all(a, a.contains('\\tA\\t')) && size(dns.answers) == 2", answer: dns, ok: true},
		"dns answer absent": {kind: probing.KindDNS, expr: "dns.answers.exists(a, a.endsWith('10.0.0.3'))", answer: dns, msg: "condition 1 failed: dns.answers.exists(a, a.endsWith('10.0.0.3'))"},
		"dns authority":     {kind: probing.KindDNS, expr: "dns.authority[0].endsWith('ns1.test.')", answer: dns, ok: true},
		"dns additional":    {kind: probing.KindDNS, expr: "dns.additional.size() == 0", answer: dns, ok: true},
		"dns latency":       {kind: probing.KindDNS, expr: "latency == duration('0s')", answer: dns, ok: true},
	})
}

func TestJSON(t *testing.T) {
	t.Parallel()
	a := httpAnswer(200, jsonBody)
	runJudgeCases(t, map[string]judgeCase{
		"string":                  {expr: "response.json.status == 'ok'", answer: a, ok: true},
		"int literal vs number":   {expr: "response.json.count == 3", answer: a, ok: true},
		"double literal":          {expr: "response.json.count == 3.0", answer: a, ok: true},
		"ordering int":            {expr: "response.json.count > 2 && response.json.count <= 3", answer: a, ok: true},
		"not equal int":           {expr: "response.json.count == 4", answer: a, msg: "condition 1 failed: response.json.count == 4"},
		"fraction":                {expr: "response.json.ratio == 0.5 && response.json.ratio < 1", answer: a, ok: true},
		"arithmetic mixing types": {expr: "response.json.count + 1 == 4", answer: a, msg: `condition 1 ("response.json.count + 1 == 4") could not be evaluated: no such overload`},
		"int conversion":          {expr: "int(response.json.count) + 1 == 4", answer: a, ok: true},
		"double arithmetic":       {expr: "response.json.count + 1.0 == 4.0", answer: a, ok: true},
		"large integer is double": {expr: "response.json.big == 9007199254740992.0", answer: a, ok: true},
		"bool":                    {expr: "response.json.ok == true", answer: a, ok: true},
		"null":                    {expr: "response.json.nothing == null", answer: a, ok: true},
		"nested object":           {expr: "response.json.nested.db.state == 'up'", answer: a, ok: true},
		"nested array":            {expr: "response.json.nested.db.replicas.size() == 3 && response.json.nested.db.replicas[2] == 3", answer: a, ok: true},
		"array of objects":        {expr: "response.json.items.exists(i, i.name == 'b' && !i.healthy)", answer: a, ok: true},
		"array all":               {expr: "response.json.items.all(i, i.healthy)", answer: a, msg: "condition 1 failed: response.json.items.all(i, i.healthy)"},
		"index":                   {expr: "response.json['items'][0]['name'] == 'a'", answer: a, ok: true},
		"missing key":             {expr: "response.json.state == 'ok'", answer: a, msg: `condition 1 ("response.json.state == 'ok'") could not be evaluated: no such key`},
		"missing nested key":      {expr: "response.json.nested.cache.state == 'up'", answer: a, msg: `condition 1 ("response.json.nested.cache.state == 'up'") could not be evaluated: no such key`},
		"index out of range":      {expr: "response.json.items[5].name == 'x'", answer: a, msg: `condition 1 ("response.json.items[5].name == 'x'") could not be evaluated: index out of range`},
		"has missing key":         {expr: "!has(response.json.state) && has(response.json.status)", answer: a, ok: true},
		"optional missing key":    {expr: "response.json.?state.orValue('none') == 'none'", answer: a, ok: true},
		"type error on dyn":       {expr: "response.json.status > 1", answer: a, msg: `condition 1 ("response.json.status > 1") could not be evaluated: no such overload`},
		"string keys only":        {expr: "response.json.size() == 8", answer: a, ok: true},
		"top-level array":         {expr: "response.json.size() == 2 && response.json[1] == 'b'", answer: httpAnswer(200, `["a","b"]`), ok: true},
		"top-level number":        {expr: "response.json == 42", answer: httpAnswer(200, " 42\n"), ok: true},
		"invalid JSON":            {expr: "response.json.status == 'ok'", answer: httpAnswer(200, "<html>ok</html>"), msg: `condition 1 ("response.json.status == 'ok'") could not be evaluated: response body is not JSON`},
		"truncated JSON":          {expr: "response.json.status == 'ok'", answer: httpAnswer(200, `{"status":"o`), msg: `condition 1 ("response.json.status == 'ok'") could not be evaluated: response body is not JSON`},
		"trailing data":           {expr: "response.json.status == 'ok'", answer: httpAnswer(200, `{"status":"ok"} x`), msg: `condition 1 ("response.json.status == 'ok'") could not be evaluated: response body is not JSON`},
		"empty body":              {expr: "response.json.status == 'ok'", answer: httpAnswer(200, " \n"), msg: `condition 1 ("response.json.status == 'ok'") could not be evaluated: response body is empty, not JSON`},
		"has json on invalid":     {expr: "!has(response.json)", answer: httpAnswer(200, "<html>"), ok: true},
		"has json on valid":       {expr: "has(response.json)", answer: a, ok: true},
		"either JSON or text":     {expr: "has(response.json) ? response.json.status == 'ok' : response.body == 'ok'", answer: httpAnswer(200, "ok"), ok: true},
	})
}

func TestMessages(t *testing.T) {
	t.Parallel()
	conds := []conditions.Condition{
		{Expression: "response.code == 200"},
		{Expression: "response.json.status == 'ok'", Message: "the service is not ok"},
		{Expression: "response.json.version.startsWith('2.')"},
	}
	j, err := conditions.Compile(probing.KindHTTP, conds)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		answer *probing.Answer
		ok     bool
		msg    string
	}{
		"all hold":                      {answer: httpAnswer(200, `{"status":"ok","version":"2.1"}`), ok: true},
		"first fails, no message":       {answer: httpAnswer(500, `{"status":"down"}`), msg: "condition 1 failed: response.code == 200"},
		"second fails with its message": {answer: httpAnswer(200, `{"status":"down"}`), msg: "the service is not ok"},
		"second cannot be evaluated":    {answer: httpAnswer(200, `{}`), msg: `condition 2 ("response.json.status == 'ok'") could not be evaluated: no such key`},
		"third cannot be evaluated":     {answer: httpAnswer(200, `{"status":"ok","version":2}`), msg: `condition 3 ("response.json.version.startsWith('2.')") could not be evaluated: no such overload`},
		"nil answer":                    {msg: "conditions not evaluated: the probe has no answer"},
		"answer of another kind":        {answer: &probing.Answer{Kind: probing.KindDNS}, msg: "conditions not evaluated: conditions of http probes cannot judge a dns probe"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ok, msg := j.Judge(context.Background(), tc.answer)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.msg, msg)
			ok2, msg2 := j.Judge(context.Background(), tc.answer)
			assert.Equal(t, ok, ok2, "a second probe of the same answer")
			assert.Equal(t, msg, msg2, "a second probe of the same answer")
		})
	}
}

func TestLongExpressionMessages(t *testing.T) {
	t.Parallel()
	long := "response.code == 200 && " + strings.Repeat("response.body != 'x' && ", 30) + "response.json.nope == 1"
	require.LessOrEqual(t, len(long), conditions.MaxExpressionBytes)
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{{Expression: long}})
	require.NoError(t, err)
	ok, msg := j.Judge(context.Background(), httpAnswer(200, "{}"))
	assert.False(t, ok)
	assert.Contains(t, msg, `condition 1 ("response.code == 200 && response.body != 'x'`)
	assert.Contains(t, msg, `…") could not be evaluated: no such key`)
	assert.Less(t, len(msg), 300, msg)

	_, err = conditions.Compile(probing.KindHTTP, []conditions.Condition{{Expression: long + " +"}})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 1024, err.Error())
}

// compileError compiles conds for kind and returns the *CompileError.
func compileError(t *testing.T, kind probing.Kind, conds ...conditions.Condition) *conditions.CompileError {
	t.Helper()
	j, err := conditions.Compile(kind, conds)
	require.Error(t, err)
	require.Nil(t, j)
	var ce *conditions.CompileError
	require.ErrorAs(t, err, &ce)
	return ce
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		kind   probing.Kind
		cond   conditions.Condition
		field  string
		reason string
	}{
		"syntax":                   {cond: conditions.Condition{Expression: "response.code == "}, reason: "Syntax error: mismatched input '<EOF>' expecting"},
		"unknown character":        {cond: conditions.Condition{Expression: "response.code # 2"}, reason: "Syntax error: token recognition error at: '#' (at 1:15)"},
		"string vs int":            {cond: conditions.Condition{Expression: "response.code == '200'"}, reason: "found no matching overload for '_==_' applied to '(int, string)' (at 1:15)"},
		"not bool":                 {cond: conditions.Condition{Expression: "response.code + 1"}, reason: "the expression evaluates to int, not bool"},
		"dyn is not bool":          {cond: conditions.Condition{Expression: "response.json.ok"}, reason: "the expression evaluates to dyn, not bool"},
		"unknown field":            {cond: conditions.Condition{Expression: "response.status == 200"}, reason: "undefined field 'status' (at 1:9)"},
		"unknown variable":         {cond: conditions.Condition{Expression: "request.code == 200"}, reason: "undeclared reference to 'request' (at 1:1)"},
		"dns on http":              {cond: conditions.Condition{Expression: "dns.rcode == 'NOERROR'"}, reason: "dns is not available in http conditions, only in dns conditions"},
		"response on dns":          {kind: probing.KindDNS, cond: conditions.Condition{Expression: "response.code == 200"}, reason: "response is not available in dns conditions, only in http conditions"},
		"reply on grpc":            {kind: probing.KindGRPC, cond: conditions.Condition{Expression: "reply == ''"}, reason: "reply is not available in grpc conditions, only in tcp, tls conditions"},
		"tls on tcp":               {kind: probing.KindTCP, cond: conditions.Condition{Expression: "has(tls.expiry)"}, reason: "tls is not available in tcp conditions, only in http, tls, grpc conditions"},
		"grpc on tls":              {kind: probing.KindTLS, cond: conditions.Condition{Expression: "grpc.status == 'SERVING'"}, reason: "grpc is not available in tls conditions, only in grpc conditions"},
		"empty":                    {cond: conditions.Condition{Expression: "  "}, reason: "the expression is empty"},
		"too long":                 {cond: conditions.Condition{Expression: "true" + strings.Repeat(" ", conditions.MaxExpressionBytes)}, reason: "the expression is 1028 bytes long, more than 1024"},
		"invalid UTF-8":            {cond: conditions.Condition{Expression: "'\xff' == ''"}, reason: "the expression is not valid UTF-8"},
		"message too long":         {cond: conditions.Condition{Expression: "true", Message: strings.Repeat("m", conditions.MaxMessageBytes+1)}, field: "message", reason: "the message is 257 bytes long, more than 256"},
		"format":                   {cond: conditions.Condition{Expression: "'%d'.format([response.code]) == '200'"}, reason: "format() is not available in conditions"},
		"lists extension":          {cond: conditions.Condition{Expression: "lists.range(3).size() == 3"}, reason: "undeclared reference to 'lists' (at 1:1)"},
		"sets extension":           {cond: conditions.Condition{Expression: "sets.contains([1], [1])"}, reason: "undeclared reference to 'sets' (at 1:1)"},
		"invalid regexp":           {cond: conditions.Condition{Expression: "response.body.matches('(')"}, reason: "invalid regular expression: error parsing regexp: missing closing ): `(`"},
		"regexp too complex":       {cond: conditions.Condition{Expression: "matches(response.body, '(a{0,40}b){0,25}')"}, reason: "regular expression too complex:"},
		"struct creation":          {cond: conditions.Condition{Expression: "webchecker.Response{code: 200} == response"}, reason: "webchecker.Response"},
		"recursion":                {cond: conditions.Condition{Expression: strings.Repeat("(", 300) + "true" + strings.Repeat(")", 300)}, reason: "expression recursion limit exceeded: 250"},
		"many errors, three shown": {cond: conditions.Condition{Expression: "a == b && c == d"}, reason: "undeclared reference to 'a' (at 1:1); undeclared reference to 'b' (at 1:6); undeclared reference to 'c' (at 1:11); and 1 more errors"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kind := tc.kind
			if kind == "" {
				kind = probing.KindHTTP
			}
			ce := compileError(t, kind, conditions.Condition{Expression: "true"}, tc.cond)
			assert.Equal(t, 1, ce.Index)
			assert.Equal(t, tc.cond.Expression, ce.Expression)
			wantField := tc.field
			if wantField == "" {
				wantField = "expression"
			}
			assert.Equal(t, wantField, ce.Field)
			assert.Contains(t, ce.Reason, tc.reason)
			assert.True(t, strings.HasPrefix(ce.Error(), "condition 2 ("), ce.Error())
			assert.NotContains(t, ce.Reason, "\n", "one line")
			assert.LessOrEqual(t, len(ce.Reason), 512)
		})
	}
}

func TestCompileErrorText(t *testing.T) {
	t.Parallel()
	ce := compileError(t, probing.KindHTTP, conditions.Condition{Expression: `response.code == "200"`})
	assert.Equal(t, `condition 1 ("response.code == \"200\""): found no matching overload for '_==_' applied to '(int, string)' (at 1:15)`, ce.Error())
}

func TestCompileLimits(t *testing.T) {
	t.Parallel()
	j, err := conditions.Compile(probing.KindHTTP, nil)
	require.NoError(t, err)
	assert.Nil(t, j, "no conditions, no Judge")

	many := make([]conditions.Condition, conditions.MaxConditions)
	for i := range many {
		many[i] = conditions.Condition{Expression: fmt.Sprintf("response.code != %d", i)}
	}
	j, err = conditions.Compile(probing.KindHTTP, many)
	require.NoError(t, err)
	ok, _ := j.Judge(context.Background(), httpAnswer(200, ""))
	assert.True(t, ok)

	_, err = conditions.Compile(probing.KindHTTP, append(many, conditions.Condition{Expression: "true"}))
	assert.EqualError(t, err, "17 conditions, more than 16")

	_, err = conditions.Compile("smtp", []conditions.Condition{{Expression: "true"}})
	assert.EqualError(t, err, `conditions: unknown probe kind "smtp"`)

	maxLen := "true" + strings.Repeat(" ", conditions.MaxExpressionBytes-4)
	_, err = conditions.Compile(probing.KindHTTP, []conditions.Condition{{Expression: maxLen, Message: strings.Repeat("m", conditions.MaxMessageBytes)}})
	assert.NoError(t, err, "the limits themselves are allowed")
}

func TestEveryKindCompiles(t *testing.T) {
	t.Parallel()
	for _, kind := range probing.Kinds {
		j, err := conditions.Compile(kind, []conditions.Condition{{Expression: "latency >= duration('0s') && now > timestamp('2000-01-01T00:00:00Z')"}})
		require.NoError(t, err, kind)
		ok, msg := j.Judge(context.Background(), &probing.Answer{Kind: kind, Latency: time.Millisecond})
		assert.True(t, ok, msg)
	}
}

func TestNeedsBody(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		kind  probing.Kind
		exprs []string
		want  bool
	}{
		"status only":              {exprs: []string{"response.code == 200"}},
		"headers and latency":      {exprs: []string{"response.headers['a'] == 'b'", "latency < duration('1s')", "has(tls.expiry)"}},
		"body":                     {exprs: []string{"response.code == 200", "response.body == 'ok'"}, want: true},
		"json":                     {exprs: []string{"response.json.status == 'ok'"}, want: true},
		"has json":                 {exprs: []string{"has(response.json)"}, want: true},
		"optional select json":     {exprs: []string{"response.?json.hasValue()"}, want: true},
		"optional select code":     {exprs: []string{"response.?code.hasValue()"}},
		"response as a whole":      {exprs: []string{"[response].exists(r, r.code == 200)"}, want: true},
		"body in a string literal": {exprs: []string{"response.headers['x'] == 'response.body'"}},
		"shadowed by a local":      {exprs: []string{"response.headers.exists(reply, reply == 'x')"}},
		"local named like a field": {exprs: []string{"[1].exists(body, body == 1) && response.code == 200"}},
		"comprehension over body":  {exprs: []string{"response.body.split('\\n').exists(l, l == 'ok')"}, want: true},
		"tcp reply":                {kind: probing.KindTCP, exprs: []string{"reply == '+OK'"}, want: true},
		"tcp latency":              {kind: probing.KindTCP, exprs: []string{"latency < duration('1s')"}},
		"tls reply":                {kind: probing.KindTLS, exprs: []string{"tls.version == '1.3'", "reply != ''"}, want: true},
		"dns":                      {kind: probing.KindDNS, exprs: []string{"dns.rcode == 'NOERROR'"}},
		"grpc":                     {kind: probing.KindGRPC, exprs: []string{"grpc.status == 'SERVING'"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kind := tc.kind
			if kind == "" {
				kind = probing.KindHTTP
			}
			conds := make([]conditions.Condition, len(tc.exprs))
			for i, e := range tc.exprs {
				conds[i] = conditions.Condition{Expression: e}
			}
			j, err := conditions.Compile(kind, conds)
			require.NoError(t, err)
			assert.Equal(t, tc.want, j.NeedsBody())
		})
	}
}

func TestSource(t *testing.T) {
	t.Parallel()
	source := func(kind probing.Kind, conds ...conditions.Condition) string {
		t.Helper()
		j, err := conditions.Compile(kind, conds)
		require.NoError(t, err)
		return j.Source()
	}
	a := conditions.Condition{Expression: "response.code == 200", Message: "not 200"}
	b := conditions.Condition{Expression: "response.body != ''"}
	assert.Equal(t, "http\n\"response.code == 200\" \"not 200\"\n\"response.body != ''\" \"\"", source(probing.KindHTTP, a, b))
	assert.Equal(t, source(probing.KindHTTP, a, b), source(probing.KindHTTP, a, b), "stable")
	assert.NotEqual(t, source(probing.KindHTTP, a, b), source(probing.KindHTTP, b, a), "order matters")
	assert.NotEqual(t, source(probing.KindHTTP, a), source(probing.KindHTTP, conditions.Condition{Expression: a.Expression}), "the message matters")
	assert.NotEqual(t, source(probing.KindHTTP, b), source(probing.KindGRPC, conditions.Condition{Expression: "latency < duration('1s')"}))
	assert.NotEqual(t, source(probing.KindTCP, conditions.Condition{Expression: "true"}), source(probing.KindDNS, conditions.Condition{Expression: "true"}), "the kind matters")
	// Quoting keeps apart what plain joining would not.
	assert.NotEqual(t,
		source(probing.KindHTTP, conditions.Condition{Expression: "true", Message: "a\" \"b"}),
		source(probing.KindHTTP, conditions.Condition{Expression: "true", Message: "a"}, conditions.Condition{Expression: "true", Message: "b"}))
}

func TestCostLimit(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("abcdefghij", 6<<10) // 60 KiB
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{
		{Expression: "response.body.split('').all(c, response.body.contains(c))"},
	})
	require.NoError(t, err)
	start := time.Now()
	ok, msg := j.Judge(context.Background(), httpAnswer(200, body))
	assert.False(t, ok)
	assert.Equal(t, `condition 1 ("response.body.split('').all(c, response.body.contains(c))") could not be evaluated: the evaluation exceeded its cost limit (1000000)`, msg)
	assert.Less(t, time.Since(start), conditions.MaxEvaluationTime, "stopped by the cost, not the time")
}

func TestTimeLimit(t *testing.T) {
	t.Parallel()
	// Each comprehension iteration is cheap, but cel-go's cost tracking
	// makes them quadratic: the deadline stops it long before the cost.
	body := "[" + strings.Repeat("1,", 20_000) + "1]"
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{
		{Expression: "response.json.all(a, response.json.all(b, a == b))"},
	})
	require.NoError(t, err)
	start := time.Now()
	ok, msg := j.Judge(context.Background(), httpAnswer(200, body))
	elapsed := time.Since(start)
	assert.False(t, ok)
	assert.Equal(t, `condition 1 ("response.json.all(a, response.json.all(b, a == b))") could not be evaluated: the evaluation took longer than 500ms`, msg)
	assert.Less(t, elapsed, conditions.MaxEvaluationTime+5*time.Second, "interrupted")
}

func TestCancellation(t *testing.T) {
	t.Parallel()
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{
		{Expression: "response.code == 200"},
		{Expression: "response.json.all(a, response.json.all(b, a == b))"},
	})
	require.NoError(t, err)
	body := "[" + strings.Repeat("1,", 20_000) + "1]"

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ok, msg := j.Judge(cancelled, httpAnswer(200, body))
	assert.False(t, ok)
	assert.Equal(t, `condition 1 ("response.code == 200") could not be evaluated: probe cancelled: context canceled`, msg)

	// Cancelled during the second condition's comprehension.
	ctx, cancelSoon := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelSoon()
	ok, msg = j.Judge(ctx, httpAnswer(200, body))
	assert.False(t, ok)
	assert.Equal(t, `condition 2 ("response.json.all(a, response.json.all(b, a == b))") could not be evaluated: probe cancelled: context deadline exceeded`, msg)
}

func TestGuards(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("a", 16<<10)
	a := httpAnswer(200, body)
	runJudgeCases(t, map[string]judgeCase{
		"replace within the limit": {expr: "response.body.replace('a', 'bb').size() == 32768", answer: a, ok: true},
		"replace with a count":     {expr: "'aaa'.replace('a', 'b', 2) == 'bba' && 'aaa'.replace('', '-') == '-a-a-a-'", answer: a, ok: true},
		"replace too large":        {expr: "response.body.replace('', response.body).size() > 0", answer: a, msg: `condition 1 ("response.body.replace('', response.body).size() > 0") could not be evaluated: replace: the result would be longer than 4194304 bytes`},
		"join":                     {expr: "['a', 'b'].join() == 'ab' && ['a', 'b'].join(', ') == 'a, b' && [].join('-') == ''", answer: a, ok: true},
		"join too large":           {expr: "response.body.split('').join(response.body).size() > 0", answer: a, msg: `condition 1 ("response.body.split('').join(response.body).size() > 0") could not be evaluated: join: the result would be longer than 4194304 bytes`},
		"matches on a long body":   {expr: "response.body.matches('(a|aa)*(a{0,20}){0,20}b')", answer: a, msg: `condition 1 ("response.body.matches('(a|aa)*(a{0,20}){0,20}b')") could not be evaluated: matches: the match could take more than 10000000 steps (program size × string length)`},
		"matches a dynamic regexp": {expr: "'abc'.matches(response.body.substring(0, 1) + 'b')", answer: a, ok: true},
		"dynamic regexp too large": {expr: "'abc'.matches('(' + response.body.substring(0, 100) + '){0,100}')", answer: a, msg: `condition 1 ("'abc'.matches('(' + response.body.substring(0, 100) + '){0,100}')") could not be evaluated: matches: regular expression too complex (more than 2000 instructions, or longer than 1024 bytes)`},
		"dynamic regexp invalid":   {expr: "'abc'.matches(response.body.substring(0, 1) + '(')", answer: a, msg: "condition 1 (\"'abc'.matches(response.body.substring(0, 1) + '(')\") could not be evaluated: matches: invalid regular expression"},
	})
}

func TestLinearIndexOf(t *testing.T) {
	t.Parallel()
	// ext.Strings' indexOf compares rune by rune: about 1.6e10 comparisons
	// here, many seconds. CEL's cost model charges len(s) × len(sub), after
	// the call: the condition fails on its cost, but at once.
	a := httpAnswer(200, strings.Repeat("a", 256<<10))
	for _, expr := range []string{
		"response.body.indexOf(response.body.substring(0, 131072) + 'b') == -1",
		"response.body.lastIndexOf('b' + response.body.substring(0, 131072)) == -1",
	} {
		j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{{Expression: expr}})
		require.NoError(t, err)
		start := time.Now()
		ok, msg := j.Judge(context.Background(), a)
		assert.False(t, ok)
		assert.Equal(t, fmt.Sprintf("condition 1 (%q) could not be evaluated: the evaluation exceeded its cost limit (1000000)", expr), msg)
		assert.Less(t, time.Since(start), 2*time.Second)
	}
}

// TestIndexOf checks that the linear indexOf and lastIndexOf keep the
// semantics of ext.Strings (rune indexes, offsets, errors).
func TestIndexOf(t *testing.T) {
	t.Parallel()
	a := httpAnswer(200, "")
	runJudgeCases(t, map[string]judgeCase{
		"indexOf":                 {expr: "'hello mellow'.indexOf('ello') == 1 && 'hello'.indexOf('x') == -1 && 'hello'.indexOf('') == 0", answer: a, ok: true},
		"indexOf offset":          {expr: "'hello mellow'.indexOf('ello', 2) == 7 && 'hello'.indexOf('', 3) == 3 && 'hello'.indexOf('', 9) == 5 && 'hello'.indexOf('o', 5) == -1", answer: a, ok: true},
		"indexOf runes":           {expr: "'€uro €uro'.indexOf('uro', 2) == 6 && 'ÿ€x'.indexOf('x') == 2", answer: a, ok: true},
		"indexOf negative offset": {expr: "'hello'.indexOf('l', -1) == 2", answer: a, msg: `condition 1 ("'hello'.indexOf('l', -1) == 2") could not be evaluated: index out of range`},
		"lastIndexOf":             {expr: "'hello mellow'.lastIndexOf('ello') == 7 && 'hello'.lastIndexOf('x') == -1 && 'hello'.lastIndexOf('') == 5 && ''.lastIndexOf('a') == -1", answer: a, ok: true},
		"lastIndexOf offset":      {expr: "'hello mellow'.lastIndexOf('ello', 6) == 1 && 'hello mellow'.lastIndexOf('ello', 7) == 7 && 'hello'.lastIndexOf('', 2) == 2 && 'hello'.lastIndexOf('l', 9) == -1", answer: a, ok: true},
		"lastIndexOf runes":       {expr: "'€uro €uro'.lastIndexOf('€') == 5 && '€uro €uro'.lastIndexOf('€u', 4) == 0 && 'ab'.lastIndexOf('abc', 1) == -1", answer: a, ok: true},
		"lastIndexOf negative":    {expr: "'hello'.lastIndexOf('l', -1) == 2", answer: a, msg: `condition 1 ("'hello'.lastIndexOf('l', -1) == 2") could not be evaluated: index out of range`},
	})
}

func TestConcurrentJudges(t *testing.T) {
	t.Parallel()
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{
		{Expression: "response.code == 200"},
		{Expression: "int(response.json.n) % 2 == 0", Message: "odd"},
		{Expression: "response.headers['content-type'].startsWith('application/')"},
	})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				n := g*50 + i
				ok, msg := j.Judge(context.Background(), httpAnswer(200, fmt.Sprintf(`{"n":%d}`, n)))
				if ok != (n%2 == 0) || (!ok && msg != "odd") {
					errs <- fmt.Errorf("n=%d: ok=%v msg=%q", n, ok, msg)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

func TestCompileIsConcurrent(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for _, kind := range probing.Kinds {
		wg.Go(func() {
			_, err := conditions.Compile(kind, []conditions.Condition{{Expression: "latency > duration('0s')"}})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
}

func TestCompileErrorIsNotAnotherError(t *testing.T) {
	t.Parallel()
	_, err := conditions.Compile(probing.KindHTTP, make([]conditions.Condition, 20))
	var ce *conditions.CompileError
	assert.False(t, errors.As(err, &ce), "too many conditions is not a condition's error")
}

// TestMapOrder checks that maps iterate in the order of their keys, so
// that a comprehension's result and first error are the same on every
// probe (Go's maps iterate at random).
func TestMapOrder(t *testing.T) {
	t.Parallel()
	var keys, obj []string
	header := http.Header{}
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		keys = append(keys, "'"+k+"'")
		obj = append(obj, fmt.Sprintf(`%q: {"n": %d}`, k, i))
		header.Set("X-"+k, fmt.Sprint(i))
	}
	obj = append(obj, `"z1": "text"`, `"z2": 2`)
	a := httpAnswer(200, "{"+strings.Join(obj, ",")+"}")
	a.HTTP.Header = header
	j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{
		{Expression: "response.json.map(k, k) == [" + strings.Join(keys, ", ") + ", 'z1', 'z2']"},
		{Expression: "response.headers.map(k, k)[0] == 'x-k00' && response.headers.map(k, k)[19] == 'x-k19'"},
		{Expression: "response.json.transformList(k, v, k).size() == 22"},
		{Expression: "response.json.all(k, response.json[k].n >= 0)"},
	})
	require.NoError(t, err)
	for range 20 {
		ok, msg := j.Judge(context.Background(), a)
		assert.False(t, ok)
		// z1's value is a string: the first error, whatever Go's map order.
		assert.Equal(t, `condition 4 ("response.json.all(k, response.json[k].n >= 0)") could not be evaluated: no such key`, msg)
	}
}
