package conditions

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
)

// TestJSONParsedOnceWhenRead counts the parses of the body as JSON in one
// Judge call: none when no expression reads response.json, one whatever
// the number of conditions (and has()) reading it.
func TestJSONParsedOnceWhenRead(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		body   string
		exprs  []string
		ok     bool
		parses int
	}{
		"not read":              {body: `{"status":"ok"}`, exprs: []string{"response.code == 200", "response.body.contains('ok')"}, ok: true, parses: 0},
		"read by one":           {body: `{"status":"ok"}`, exprs: []string{"response.json.status == 'ok'"}, ok: true, parses: 1},
		"read by three":         {body: `{"status":"ok","n":1}`, exprs: []string{"has(response.json.status)", "response.json.status == 'ok'", "response.json.n == 1"}, ok: true, parses: 1},
		"read in a loop":        {body: `[1,2,3]`, exprs: []string{"response.json.all(x, response.json.exists(y, y == x))"}, ok: true, parses: 1},
		"invalid, read twice":   {body: `<html>`, exprs: []string{"!has(response.json)", "response.json.status == 'ok'"}, parses: 1},
		"not reached":           {body: `{"status":"ok"}`, exprs: []string{"response.code == 500", "response.json.status == 'ok'"}, parses: 0},
		"short-circuited":       {body: `{"status":"ok"}`, exprs: []string{"response.code == 200 || response.json.status == 'ok'"}, ok: true, parses: 0},
		"read after other vars": {body: `{"status":"ok"}`, exprs: []string{"response.code == 200", "response.json.status == 'ok'", "latency >= duration('0s')"}, ok: true, parses: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conds := make([]Condition, len(tc.exprs))
			for i, e := range tc.exprs {
				conds[i] = Condition{Expression: e}
			}
			j, err := Compile(probing.KindHTTP, conds)
			require.NoError(t, err)
			a := &probing.Answer{Kind: probing.KindHTTP, HTTP: &probing.HTTPAnswer{StatusCode: 200, Header: http.Header{}, Body: []byte(tc.body)}}
			ok, msg, s := j.(*judge).evaluate(context.Background(), a)
			assert.Equal(t, tc.ok, ok, msg)
			require.NotNil(t, s)
			assert.Equal(t, tc.parses, s.jsonParses)
		})
	}
}
