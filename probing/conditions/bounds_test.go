package conditions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/conditions"
	"github.com/networkio/webchecker/probing/pattern"
)

// TestMatchesCostStopsTheIssueConditions: the issue's conditions, each a
// match of 10M steps repeated in a comprehension, are stopped by the cost
// of matches() (program size × string length) within a 2s probe timeout.
// Charged by the pattern's length (CEL's estimate) the first runs its ten
// matches and fails as false, the nested one runs a hundred.
func TestMatchesCostStopsTheIssueConditions(t *testing.T) {
	body := strings.Repeat("a", 10_000)
	for name, expr := range map[string]string{
		"exists":        "[1,2,3,4,5,6,7,8,9,10].exists(i, response.body.matches('[ab]{990}c'))",
		"nested exists": "[1,2,3,4,5,6,7,8,9,10].exists(i, [1,2,3,4,5,6,7,8,9,10].exists(j, response.body.matches('[ab]{990}c')))",
	} {
		t.Run(name, func(t *testing.T) {
			j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{{Expression: expr}})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			ok, msg := j.Judge(ctx, httpAnswer(200, body))
			elapsed := time.Since(start)
			assert.False(t, ok)
			assert.Equal(t, fmt.Sprintf("condition 1 (%q) could not be evaluated: the evaluation exceeded its cost limit (%d)", expr, conditions.MaxCost), msg)
			t.Logf("stopped after %v", elapsed)
			if !raceEnabled {
				assert.Less(t, elapsed, 2*time.Second)
			}
		})
	}
}

// TestDeadlineBeforeEachCondition: conditions without a comprehension
// (where CEL checks the context) are not started once the probe's
// deadline has passed: 16 matches of 5M steps each stop after the first
// or second when the deadline is 60ms away.
func TestDeadlineBeforeEachCondition(t *testing.T) {
	conds := make([]conditions.Condition, conditions.MaxConditions)
	for i := range conds {
		conds[i] = conditions.Condition{Expression: fmt.Sprintf("!response.body.matches('[ab]{99%d}c')", i%10)}
	}
	j, err := conditions.Compile(probing.KindHTTP, conds)
	require.NoError(t, err)
	a := httpAnswer(200, strings.Repeat("a", 5_000))

	one := time.Now()
	single, err := conditions.Compile(probing.KindHTTP, conds[:1])
	require.NoError(t, err)
	ok, msg := single.Judge(context.Background(), a)
	require.True(t, ok, msg)
	perCondition := time.Since(one)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	start := time.Now()
	ok, msg = j.Judge(ctx, a)
	elapsed := time.Since(start)
	assert.False(t, ok)
	assert.Contains(t, msg, "could not be evaluated: probe cancelled: context deadline exceeded")
	t.Logf("one condition %v; stopped after %v", perCondition, elapsed)
	assert.Less(t, elapsed, 60*time.Millisecond+3*perCondition, "conditions ran past the deadline")
	require.Less(t, 60*time.Millisecond+3*perCondition, 12*perCondition, "conditions too fast for the test to tell")
}

// TestEvaluationErrorsEchoNothing: no evaluation error's message holds a
// byte of what the target sent, whatever function fails on it: each
// error kind has a fixed text.
func TestEvaluationErrorsEchoNothing(t *testing.T) {
	t.Parallel()
	const secret = "TOP-SECRET-123"
	json := `{"s":"` + secret + `","n":"` + secret + `","big":1e300,"k":{"` + secret + `":1}}`
	for name, tc := range map[string]struct {
		expr, body, want string
	}{
		"map index":             {"{'x': 0}[response.body] == 0", secret, "no such key"},
		"json map index":        {"response.json.k[response.json.s.substring(1)] == 1", json, "no such key"},
		"header index":          {"response.headers[response.body] == ''", secret, "no such key"},
		"timestamp":             {"timestamp(response.body) > now", secret, "invalid timestamp: not an RFC 3339 timestamp in range"},
		"duration":              {"duration(response.body) > duration('1s')", secret, "invalid conversion"},
		"int":                   {"int(response.body) == 1", secret, "invalid conversion"},
		"uint":                  {"uint(response.body) == 1u", secret, "invalid conversion"},
		"double":                {"double(response.body) == 1.0", secret, "invalid conversion"},
		"bool":                  {"bool(response.body)", secret, "invalid conversion"},
		"int of a number":       {"[1][int(response.body)] == 1", "123", "index out of range"},
		"list index":            {"[1][response.body.size()] == 1", secret, "index out of range"},
		"charAt":                {"response.body.charAt(100) == 'x'", secret, "index out of range"},
		"substring":             {"response.body.substring(100) == 'x'", secret, "index out of range"},
		"indexOf offset":        {"response.body.indexOf('x', 10 - response.body.size()) == 1", secret, "index out of range"},
		"json not JSON":         {"response.json.s == 'x'", secret + "{", "response body is not JSON"},
		"json type":             {"response.json.s > 1", json, "no such overload"},
		"json key":              {"response.json.missing == 1", json, "no such key"},
		"json overflow":         {"int(response.json.big) == 1", json, "integer overflow"},
		"json int of a string":  {"int(response.json.n) == 1", json, "invalid conversion"},
		"dynamic pattern":       {"'x'.matches(response.body + '(')", secret, "matches: invalid regular expression"},
		"dynamic pattern large": {"'x'.matches('(' + response.body + '){1000}')", secret, "matches: regular expression too complex (more than 2000 instructions, or longer than 1024 bytes)"},
		"division by zero":      {"1 / (response.body.size() - 14) == 1", secret, "division by zero"},
		"modulus by zero":       {"1 % (response.body.size() - 14) == 1", secret, "modulus by zero"},
		"overflow":              {"9223372036854775807 + response.body.size() > 0", secret, "integer overflow"},
		"optional none":         {"optional.none().value() == response.body", secret, "optional.none() dereference"},
		"dyn field":             {"dyn(response).body.x == 1", secret, "no such key"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{{Expression: tc.expr}})
			require.NoError(t, err)
			ok, msg := j.Judge(context.Background(), httpAnswer(200, tc.body))
			require.False(t, ok)
			assert.NotContains(t, strings.ReplaceAll(msg, tc.expr, ""), secret[1:5])
			assert.NotContains(t, strings.ReplaceAll(msg, tc.expr, ""), "123")
			assert.Equal(t, fmt.Sprintf("condition 1 (%q) could not be evaluated: %s", tc.expr, tc.want), msg)
		})
	}
}

// TestJSONMemoryBound: a body whose decoded value would take more than
// MaxJSONMemory is refused before it is decoded; a body of the default
// 64 KiB limit of any shape is decoded.
func TestJSONMemoryBound(t *testing.T) {
	t.Parallel()
	repeat := func(item string, n int) string {
		return "[" + strings.Repeat(item+",", n/(len(item)+1)) + item + "]"
	}
	for name, tc := range map[string]struct {
		body    string
		refused bool
	}{
		"1 MiB of small objects":     {body: repeat(`{"a":{}}`, 1<<20), refused: true},
		"1 MiB of empty objects":     {body: repeat(`{}`, 1<<20), refused: true},
		"64 KiB of empty objects":    {body: repeat(`{}`, 60<<10)},
		"64 KiB of nested objects":   {body: strings.Repeat(`{"":`, 9000) + "1" + strings.Repeat("}", 9000)},
		"1 MiB of numbers":           {body: repeat("1", 1<<20), refused: true},
		"64 KiB of numbers":          {body: repeat("1", 64<<10)},
		"1 MiB of a string":          {body: `"` + strings.Repeat("a", 1<<20) + `"`},
		"a string of braces":         {body: `"` + strings.Repeat("{", 1<<20) + `"`},
		"1 MiB of typical responses": {body: repeat(`{"name":"service-a","status":"ok","latency":12.5,"tags":["x","y"]}`, 1<<20)},
		"64 KiB of nested arrays":    {body: strings.Repeat("[", 9000) + strings.Repeat("]", 9000)},
		"escaped quotes in a string": {body: `"` + strings.Repeat(`\"{`, 1<<18) + `"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if raceEnabled && !tc.refused && len(tc.body) > 128<<10 {
				t.Skip("decoding takes longer than MaxEvaluationTime with the race detector")
			}
			j, err := conditions.Compile(probing.KindHTTP, []conditions.Condition{{Expression: "has(response.json) || !has(response.json)"}, {Expression: "type(response.json) != null_type"}})
			require.NoError(t, err)
			ok, msg := j.Judge(context.Background(), httpAnswer(200, tc.body))
			if tc.refused {
				assert.False(t, ok)
				assert.Contains(t, msg, fmt.Sprintf("response body is too large a JSON value: decoded, it would take more than %d bytes", conditions.MaxJSONMemory))
				return
			}
			assert.True(t, ok, msg)
		})
	}
	assert.Equal(t, 16*probing.MaxBodyMatchBytes, conditions.MaxJSONMemory)
	_ = pattern.MaxProgramSize
}
