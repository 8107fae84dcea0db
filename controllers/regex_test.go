package controllers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
)

// overLimit compiles to 2001 instructions, one over the bound; atLimit to
// 1999.
const (
	overLimit = "[ab]{998}[ab]{999}cd"
	atLimit   = "[ab]{997}[ab]{999}c"
)

// worstPattern is the issue's: 1,021 bytes of copies of .{1000}.
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
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: worstPattern}
		},
		msg: []string{"spec.bodyMatch.regex: regular expression too complex", "2000"},
	},
	"body-match-work": {
		host: "http://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: atLimit, MaxBodyBytes: ptr.To[int64](1 << 20)}
		},
		msg: []string{"spec.bodyMatch.regex with spec.bodyMatch.maxBodyBytes 1048576", "1999 instructions × 1048576 bytes is more than 33554432 steps", "at most 16785 bytes"},
	},
	"tcp-expect": {
		host:   "tcp://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) { s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: overLimit} },
		msg:    []string{"spec.tcp.expect: regular expression too complex: its program has 2001 instructions, more than 2000"},
	},
	"tcp-expect-work": {
		host:   "tcp://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) { s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: atLimit} },
		msg:    []string{"spec.tcp.expect with spec.tcp.maxReplyBytes 65536", "more than 33554432 steps"},
	},
	"dns-answer-match": {
		host: "dns://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.DNS = &webcheckerv1alpha1.DNSProbe{Name: "a.test", AnswerMatch: []string{"ok", "fine", worstPattern}}
		},
		msg: []string{"spec.dns.answerMatch[2]: regular expression too complex", "2000"},
	},
	"condition": {
		host: "http://127.0.0.1:1",
		mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.Conditions = []webcheckerv1alpha1.ResponseCondition{{Expression: "response.body.matches('" + overLimit + "')"}}
		},
		msg: []string{"spec.conditions[0].expression: condition 1", "regular expression too complex: its program has 2001 instructions, more than 2000"},
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
			_, err := controllers.CheckFor(wc, nil)
			var tooComplex *controllers.RegexTooComplexError
			require.True(t, errors.As(err, &tooComplex), "error %v", err)
			for _, m := range tc.msg {
				assert.Contains(t, tooComplex.Message, m)
			}
		})
	}
	wc := &webcheckerv1alpha1.WebChecker{Spec: webcheckerv1alpha1.WebCheckerSpec{
		Host:      "http://127.0.0.1:1",
		BodyMatch: &webcheckerv1alpha1.BodyMatch{Regex: atLimit, MaxBodyBytes: ptr.To[int64](16 << 10)},
	}}
	_, err := controllers.CheckFor(wc, nil)
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
			if !strings.HasPrefix(tc.host, "http") {
				wc.Spec.Path = ""
			} else {
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
