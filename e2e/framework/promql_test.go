package framework_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/networkio/webchecker/e2e/framework"
)

func TestMetricNames(t *testing.T) {
	tests := map[string]struct {
		expr string
		want []string
	}{
		"bare metric":            {`up`, []string{"up"}},
		"matchers are labels":    {`webchecker_probe_success{namespace="shop",name=~"a|b"}`, []string{"webchecker_probe_success"}},
		"recording rule name":    {`1 - webchecker:probe_availability:ratio_rate1h > 0.5`, []string{"webchecker:probe_availability:ratio_rate1h"}},
		"aggregation by labels":  {`sum by (namespace, le) (rate(x_bucket[5m]))`, []string{"x_bucket"}},
		"grouping after":         {`sum(rate(x_total[$__rate_interval])) without (instance)`, []string{"x_total"}},
		"functions and numbers":  {`histogram_quantile(0.99, sum by (le) (rate(lag_bucket{le!="+Inf"}[5m]))) > 1e-3`, []string{"lag_bucket"}},
		"binary operators":       {`a and on (job) b or c unless ignoring (x) d`, []string{"a", "b", "c", "d"}},
		"group_left with labels": {`a * on (namespace) group_left (team) b`, []string{"a", "b"}},
		"bool and offset":        {`a > bool b offset 5m`, []string{"a", "b"}},
		"subquery":               {`changes(max(up{job="x"})[1h:1m])`, []string{"up"}},
		"duplicates once":        {`sum(a{r="1"}) / sum(a)`, []string{"a"}},
		"strings are not names":  {`label_replace(a, "dst", "$1", "src", "(.*)") or vector(0)`, []string{"a"}},
		"escaped quote":          {`a{x="say \"b\""}`, []string{"a"}},
		"comment":                {"a # b\n+ c", []string{"a", "c"}},
		"time and no metric":     {`time() - 5`, nil},
		"name selector only":     {`{__name__="a"}`, nil},
		"multi-line":             {"(\n  (1 - a) > (14.4 * (1 - 0.995))\n  and\n  (1 - b) > 0.1\n)", []string{"a", "b"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, framework.MetricNames(tc.expr))
		})
	}
}
