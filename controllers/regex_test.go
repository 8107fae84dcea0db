package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
)

// Patterns the CRD admits: overLimit compiles to 2234 instructions, over
// the bound; manyCounts to 992, atLimit to 1999.
var (
	overLimit = "(?:" + strings.Repeat("a", 248) + "){9}" // 256 bytes, a group count alone

	manyCounts = strings.Repeat("[ab]{99}", 10)
	atLimit    = "[ab]{997}[ab]{999}c" // CheckFor only: the CRD refuses counts over 99
)

// worstPattern is the issue's: 1,021 bytes of copies of .{1000}, refused
// by the CRD, and by CheckFor for an object stored before.
var worstPattern = strings.Repeat(".{1000}", 145) + ".{10}c"

// regexSpecs are specs whose regular expression is over a bound, with
// what the Ready message must say (the field and the limit).
var regexSpecs = map[string]struct {
	host   string
	mutate func(*webcheckerv1alpha1.WebCheckerSpec)
	msg    []string
}{
	"body-match": {
		host: "http://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: overLimit}
		},
		msg: []string{"spec.bodyMatch.regex: regular expression too complex: its program has 2234 instructions, more than 2000"},
	},
	"body-match-work": {
		host: "http://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: manyCounts, MaxBodyBytes: ptr.To[int64](1 << 20)}
		},
		msg: []string{"spec.bodyMatch.regex with spec.bodyMatch.maxBodyBytes 1048576", "992 instructions × 1048576 bytes is more than 33554432 steps", "at most 33825 bytes"},
	},
	"tcp-expect": {
		host:   "tcp://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) { s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: overLimit} },
		msg:    []string{"spec.tcp.expect: regular expression too complex: its program has 2234 instructions, more than 2000"},
	},
	"tcp-expect-work": {
		host:   "tcp://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) { s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: manyCounts} },
		msg:    []string{"spec.tcp.expect with spec.tcp.maxReplyBytes 65536", "more than 33554432 steps"},
	},
	"dns-answer-match": {
		host: "dns://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.DNS = &webcheckerv1alpha1.DNSProbe{Name: "a.test", AnswerMatch: []string{"ok", "fine", overLimit}}
		},
		msg: []string{"spec.dns.answerMatch[2]: regular expression too complex: its program has 2234 instructions, more than 2000"},
	},
	"condition": {
		host: "http://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.Conditions = []webcheckerv1alpha1.ResponseCondition{{Expression: "response.body.matches('" + strings.Repeat("(?:[ab]{99}){9}", 3) + "')"}}
		},
		msg: []string{"spec.conditions[0].expression: condition 1", "regular expression too complex: its program has 2675 instructions, more than 2000"},
	},
}

// TestRegexTooComplexError: CheckFor refuses a regular expression over
// the bounds, in any of the four places, with a *RegexTooComplexError
// that names the field and the limit; one at the limit is accepted.
func TestRegexTooComplexError(t *testing.T) {
	t.Parallel()
	for name, tc := range regexSpecs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wc := &webcheckerv1alpha1.WebChecker{Spec: webcheckerv1alpha1.WebCheckerSpec{Host: tc.host}}
			tc.mutate(&wc.Spec)
			_, err := checkspec.CheckFor(wc, nil)
			var tooComplex *checkspec.RegexTooComplexError
			require.True(t, errors.As(err, &tooComplex), "error %v", err)
			for _, m := range tc.msg {
				assert.Contains(t, tooComplex.Message, m)
			}
		})
	}
	// The pattern, in an object stored before the CRD refused it.
	for field, spec := range map[string]webcheckerv1alpha1.WebCheckerSpec{
		"spec.bodyMatch.regex":    {Host: "http://127.0.0.1:1", BodyMatch: &webcheckerv1alpha1.BodyMatch{Regex: worstPattern}},
		"spec.tcp.expect":         {Host: "tcp://127.0.0.1:1", TCP: &webcheckerv1alpha1.TCPProbe{Expect: worstPattern}},
		"spec.dns.answerMatch[0]": {Host: "dns://127.0.0.1:1", DNS: &webcheckerv1alpha1.DNSProbe{Name: "a.test", AnswerMatch: []string{worstPattern}}},
		"spec.conditions[0]":      {Host: "http://127.0.0.1:1", Conditions: []webcheckerv1alpha1.ResponseCondition{{Expression: "'x'.matches('" + worstPattern + "')"}}},
	} {
		_, err := checkspec.CheckFor(&webcheckerv1alpha1.WebChecker{Spec: spec}, nil)
		var tooComplex *checkspec.RegexTooComplexError
		if strings.HasPrefix(field, "spec.conditions") {
			// The expression is over its 1 KiB limit: an invalid condition.
			require.Error(t, err)
			continue
		}
		require.True(t, errors.As(err, &tooComplex), "%s: error %v", field, err)
		assert.Contains(t, tooComplex.Message, field+": regular expression too complex: its program has 145013 instructions, more than 2000")
	}
	wc := &webcheckerv1alpha1.WebChecker{Spec: webcheckerv1alpha1.WebCheckerSpec{
		Host:      "http://127.0.0.1:1",
		BodyMatch: &webcheckerv1alpha1.BodyMatch{Regex: atLimit, MaxBodyBytes: ptr.To[int64](16 << 10)},
	}}
	_, err := checkspec.CheckFor(wc, nil)
	require.NoError(t, err)
}

// TestRegexTooComplexIsReady: the reconciler writes Ready False with
// reason RegexTooComplex, and the message naming the field, for a checker
// of each place the API server accepted.
func TestRegexTooComplexIsReady(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	for name, tc := range regexSpecs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wc := newChecker(ns, name, tc.host, "")
			if strings.HasPrefix(tc.host, "http") {
				wc.Spec.Path = "/"
			}
			tc.mutate(&wc.Spec)
			require.NoError(t, k8sClient.Create(context.Background(), wc))
			got := waitReady(t, client.ObjectKeyFromObject(wc), metav1.ConditionFalse, webcheckerv1alpha1.ReasonRegexTooComplex, secretTimeout)
			for _, m := range tc.msg {
				assert.Contains(t, ready(got).Message, m)
			}
		})
	}
}

// TestRegexCountsAreBoundedByTheAPIServer: the CRD refuses, before its
// own check compiles them, the patterns whose repeat counts would make
// that check build a large program (the copies of .{1000} took
// the API server 38 MB and 74 ms per create), in every regex field, and
// admits the usual ones.
func TestRegexCountsAreBoundedByTheAPIServer(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const bounded = "repeat counts must be at most 99 and 1000 in all, and a group's at most 9"
	rejected := map[string]struct {
		mutate func(*webcheckerv1alpha1.WebCheckerSpec)
		want   string
	}{
		"the issue's pattern": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: worstPattern}
		}, "regex's " + bounded},
		"a count over 99": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "a{100}"}
		}, "regex's " + bounded},
		"an upper count over 99": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: "a{2,100}"}
		}), "expect's " + bounded},
		"a group's count over 9": {then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.DNS.AnswerMatch = []string{"ok", "(?:ab){10}"}
		}), "answerMatch entries' " + bounded},
		"a group's count after others over 32 bytes": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: strings.Repeat("(?:[ab]{99}){9}", 3)}
		}, "regex's " + bounded},
		"a group's count over 256 bytes": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "(?:" + strings.Repeat("a", 1000) + "){9}"}
		}, "regex's " + bounded},
		"counts over 1000 in all": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: strings.Repeat("[ab]{99}", 11)}
		}), "expect's " + bounded},
	}
	i := 0
	for name, tc := range rejected {
		i++
		t.Run(name, func(t *testing.T) {
			assertRejected(t, newChecker(ns, fmt.Sprintf("rejected-%d", i), "http://example.com", "/"), tc.mutate, tc.want)
		})
	}
	for i, expr := range []string{`\d{1,3}(\.\d{1,3}){3}`, "[0-9a-f]{64}", "x{2,99}y{5,}", "[{]100[}]", `"status"\s*:\s*"ok"`, manyCounts, overLimit, "(?:" + strings.Repeat("a", 200) + "){9}", "(?:ab){9}(?:cd){2,3}" + strings.Repeat("x", 100)} {
		wc := newChecker(ns, fmt.Sprintf("admitted-%d", i), "http://example.com", "/")
		wc.Spec.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: expr}
		require.NoError(t, k8sClient.Create(context.Background(), wc, client.DryRunAll), expr)
	}
}
