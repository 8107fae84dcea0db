package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// textOf returns a spec mutation that fills a POST's body, headers and
// conditions with n characters in all, each field up to its own limit.
func textOf(n int) func(*webcheckerv1alpha1.WebCheckerSpec) {
	return func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Method = http.MethodPost
		take := func(limit int) string {
			k := max(0, min(n, limit))
			n -= k
			return strings.Repeat("x", k)
		}
		s.Body = take(16384)
		for i := 0; n > 0 && i < 16; i++ {
			s.Conditions = append(s.Conditions, webcheckerv1alpha1.ResponseCondition{Expression: take(1024)})
		}
		for i := 0; n > 0 && i < 32; i++ {
			name := fmt.Sprintf("X-%02d", i) // 4 characters, counted too
			n -= len(name)
			s.Headers = append(s.Headers, webcheckerv1alpha1.HTTPHeader{Name: name, Value: take(8192)})
		}
	}
}

// TestSpecTextIsBoundedAsAWhole: the API server refuses a spec whose free
// text, all fields together, is above webcheckerv1alpha1.MaxSpecText
// characters, though every field is within its own limit, and accepts one
// at the bound.
func TestSpecTextIsBoundedAsAWhole(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const want = "the spec's headers, body, conditions, tcp.send, tcp.expect, bodyMatch.regex and dns.answerMatch together must be at most 32768 characters"
	tests := map[string]struct {
		mutate func(*webcheckerv1alpha1.WebCheckerSpec)
		ok     bool
	}{
		"at the bound": {textOf(webcheckerv1alpha1.MaxSpecText), true},
		"one over":     {textOf(webcheckerv1alpha1.MaxSpecText + 1), false},
		"headers alone, one over": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
			for i := range 4 {
				s.Headers = append(s.Headers, webcheckerv1alpha1.HTTPHeader{Name: fmt.Sprintf("X-%02d", i), Value: strings.Repeat("x", 8192-4)})
			}
			s.Headers[3].Value += "x"
		}, false},
		"every field at its own limit": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
			textOf(1 << 20)(s)
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: strings.Repeat("x", 1024)}
		}, false},
	}
	i := 0
	for name, tc := range tests {
		i++
		t.Run(name, func(t *testing.T) {
			wc := newChecker(ns, fmt.Sprintf("text-%d", i), "http://example.com", "/")
			if !tc.ok {
				assertRejected(t, wc, tc.mutate, want)
				return
			}
			tc.mutate(&wc.Spec)
			require.NoError(t, k8sClient.Create(context.Background(), wc, client.DryRunAll))
		})
	}
}
