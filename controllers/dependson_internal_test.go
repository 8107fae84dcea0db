package controllers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// chain is a graph of n checkers c0 -> c1 -> ... -> c(n-1) whose last one
// depends on last.
func chain(n int, last string) map[string][]string {
	g := map[string][]string{}
	for i := range n - 1 {
		g[fmt.Sprintf("c%d", i)] = []string{fmt.Sprintf("c%d", i+1)}
	}
	g[fmt.Sprintf("c%d", n-1)] = []string{last}
	return g
}

// TestFindCycle checks the cycle search on dependency graphs (each
// checker's spec.dependsOn; a name absent from the graph does not exist):
// the shortest cycle back to the root, none for a cycle the root only
// leads into, none for a diamond, missing checkers passed over, and the
// bound on how many checkers are read.
func TestFindCycle(t *testing.T) {
	long := chain(webcheckerv1alpha1.MaxDependencyDepth, "root")
	tooLong := chain(webcheckerv1alpha1.MaxDependencyDepth+1, "root")
	tests := map[string]struct {
		graph     map[string][]string
		dependsOn []string // root's
		want      []string
		reads     int // checkers whose dependencies were read
	}{
		"no dependencies":     {graph: map[string][]string{}, dependsOn: nil, want: nil},
		"leaf dependency":     {graph: map[string][]string{"a": nil}, dependsOn: []string{"a"}, want: nil, reads: 1},
		"two checkers":        {graph: map[string][]string{"a": {"root"}}, dependsOn: []string{"a"}, want: []string{"root", "a", "root"}, reads: 1},
		"three checkers":      {graph: map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"root"}}, dependsOn: []string{"a"}, want: []string{"root", "a", "b", "c", "root"}, reads: 3},
		"shortest of two":     {graph: map[string][]string{"a": {"b"}, "b": {"root"}, "x": {"root"}}, dependsOn: []string{"a", "x"}, want: []string{"root", "x", "root"}, reads: 2},
		"cycle not via root":  {graph: map[string][]string{"a": {"b"}, "b": {"a"}}, dependsOn: []string{"a"}, want: nil, reads: 2},
		"diamond":             {graph: map[string][]string{"a": {"c"}, "b": {"c"}, "c": nil}, dependsOn: []string{"a", "b"}, want: nil, reads: 3},
		"missing in the path": {graph: map[string][]string{"a": {"gone", "b"}, "b": {"root"}}, dependsOn: []string{"a"}, want: []string{"root", "a", "b", "root"}, reads: 3},
		"repeated names":      {graph: map[string][]string{"a": {"b", "b"}, "b": nil}, dependsOn: []string{"a", "a"}, want: nil, reads: 2},
		"as long as read":     {graph: long, dependsOn: []string{"c0"}, want: append(append([]string{"root"}, keysOfChain(webcheckerv1alpha1.MaxDependencyDepth)...), "root"), reads: webcheckerv1alpha1.MaxDependencyDepth},
		"longer than read":    {graph: tooLong, dependsOn: []string{"c0"}, want: nil, reads: webcheckerv1alpha1.MaxDependencyDepth},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reads := 0
			got, err := findCycle("root", tc.dependsOn, webcheckerv1alpha1.MaxDependencyDepth, func(name string) ([]string, error) {
				reads++
				return tc.graph[name], nil
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.reads, reads, "checkers read")
		})
	}
}

// keysOfChain is c0 ... c(n-1).
func keysOfChain(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("c%d", i)
	}
	return out
}

// TestFindCycleStopsAtAFailedRead checks that a failed read ends the
// search with its error, for a retry, rather than a verdict.
func TestFindCycleStopsAtAFailedRead(t *testing.T) {
	failed := errors.New("cache not synced")
	_, err := findCycle("root", []string{"a"}, webcheckerv1alpha1.MaxDependencyDepth, func(string) ([]string, error) { return nil, failed })
	assert.ErrorIs(t, err, failed)
}
