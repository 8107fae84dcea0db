package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoSeries is returned by CheckExpression for an expression naming a
// metric that has no series.
var ErrNoSeries = errors.New("no series")

// promqlKeywords are identifiers of PromQL that name no metric: keywords
// and aggregation operators (which may be followed by a grouping before
// their parenthesis). A function is recognised by its parenthesis.
var promqlKeywords = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "group": true, "stddev": true, "stdvar": true,
	"topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true,
}

// promqlLabelLists are keywords followed by a parenthesised list of label
// names, which are not metric names.
var promqlLabelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// MetricNames returns the metric names a PromQL expression selects, sorted
// and without duplicates: the identifiers that are neither functions,
// aggregations or keywords, nor label names in matchers and grouping lists.
// It is a lexer, not a parser: expr must be valid PromQL (Prometheus says
// so when it runs it).
func MetricNames(expr string) []string {
	var names []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			i = skipUntil(expr, i, '}') // label matchers
		case c == '[':
			i = skipUntil(expr, i, ']') // ranges and subqueries
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdentChar(expr[i]) {
				i++
			}
			ident := expr[start:i]
			next := i
			for next < len(expr) && (expr[next] == ' ' || expr[next] == '\t' || expr[next] == '\n') {
				next++
			}
			parenthesis := next < len(expr) && expr[next] == '('
			switch {
			case promqlLabelLists[strings.ToLower(ident)] && parenthesis:
				i = skipUntil(expr, next, ')')
			case parenthesis, promqlKeywords[strings.ToLower(ident)]:
				// a function, an aggregation or a keyword
			default:
				names = append(names, ident)
			}
		case c >= '0' && c <= '9' || c == '.':
			// A number or a duration (0.99, 1e3, 5m): no name in it.
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '.') {
				i++
			}
		default:
			i++
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) int {
	quote := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if quote != '`' {
				i++
			}
		case quote:
			return i + 1
		}
	}
	return i
}

// skipUntil returns the index after the first end at or after i that is not
// in a string literal.
func skipUntil(s string, i int, end byte) int {
	for i < len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(s, i)
		case c == end:
			return i + 1
		default:
			i++
		}
	}
	return i
}

// CheckExpression runs the PromQL expression expr now, which must succeed
// (whatever it returns), and checks that every metric it names has at
// least one series: an expression naming a metric that does not exist (a
// typo, or a metric no code exports) fails with ErrNoSeries. It returns how
// many samples expr returned.
func (p *Prometheus) CheckExpression(ctx context.Context, expr string) (int, error) {
	result, err := p.Query(ctx, expr)
	if err != nil {
		return 0, err
	}
	var missing []string
	for _, name := range MetricNames(expr) {
		series, err := p.Query(ctx, "count("+name+")")
		if err != nil {
			return 0, err
		}
		if len(series) == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return 0, fmt.Errorf("%w of %s, named in %q", ErrNoSeries, strings.Join(missing, ", "), expr)
	}
	return len(result), nil
}
