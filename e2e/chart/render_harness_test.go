package chart_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/networkio/webchecker/e2e/chart"
)

// rendered is a rendered chart, looked up by kind and name.
type rendered []*unstructured.Unstructured

// renderChart renders the chart with values, as release chartRelease in
// namespace chartNamespace.
func renderChart(t *testing.T, values map[string]any) rendered {
	t.Helper()
	ch, err := chart.Load()
	require.NoError(t, err)
	objs, err := chart.Render(ch, chartRelease, chartNamespace, values)
	require.NoError(t, err)
	return objs
}

// kinds lists "Kind/name" of every object.
func (r rendered) kinds() []string {
	var out []string
	for _, obj := range r {
		out = append(out, obj.GetKind()+"/"+obj.GetName())
	}
	slices.Sort(out)
	return out
}

func (r rendered) find(kind, name string) *unstructured.Unstructured {
	for _, obj := range r {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj
		}
	}
	return nil
}

// renderedAs converts the rendered object kind/name into a typed object;
// it fails the test when there is none.
func renderedAs[T any](t *testing.T, r rendered, kind, name string) *T {
	t.Helper()
	obj := r.find(kind, name)
	require.NotNil(t, obj, "no %s/%s in %v", kind, name, r.kinds())
	typed := new(T)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, typed, true))
	return typed
}

func managerContainer(t *testing.T, r rendered) corev1.Container {
	t.Helper()
	deploy := renderedAs[appsv1.Deployment](t, r, "Deployment", "webchecker")
	require.Len(t, deploy.Spec.Template.Spec.Containers, 1)
	return deploy.Spec.Template.Spec.Containers[0]
}

// flagsNamed returns the arguments that set the flag name (--name=value).
func flagsNamed(args []string, name string) []string {
	var out []string
	for _, arg := range args {
		if strings.HasPrefix(arg, name+"=") {
			out = append(out, arg)
		}
	}
	return out
}

// ruleSet flattens rules into one "group/resource:verb" (or "url:verb")
// entry per permission, so that rules compare regardless of how they are
// grouped and ordered.
func ruleSet(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, rule := range rules {
		for _, verb := range rule.Verbs {
			for _, url := range rule.NonResourceURLs {
				out = append(out, url+":"+verb)
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					names := rule.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, name := range names {
						out = append(out, strings.TrimSuffix(group+"/"+resource+"/"+name, "/")+":"+verb)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// promtoolRuleTest renders the chart's PrometheusRule (every rule group is
// on by default) and checks its rules with promtool (from Debian's
// prometheus package): they must be valid and pass unitTest, a promtool
// rule unit test file reading rules.yaml. In unitTest, RUNBOOK(<alert>)
// stands for the quoted runbook annotation of that alert, so that
// exp_annotations need not repeat its text.
func promtoolRuleTest(t *testing.T, unitTest string) {
	t.Helper()
	promtoolRuleTestWith(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}}, unitTest)
}

// promtoolRuleTestWith is promtoolRuleTest with the chart rendered with
// values.
func promtoolRuleTestWith(t *testing.T, values map[string]any, unitTest string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool comes with Debian's prometheus package: make debian-tools")
	spec := renderedRules(t, values)
	unitTest = runbookPlaceholder.ReplaceAllStringFunc(unitTest, func(m string) string {
		alert := runbookPlaceholder.FindStringSubmatch(m)[1]
		runbook := ruleAnnotation(spec, alert, "runbook")
		require.NotEmpty(t, runbook, "alert %s has a runbook annotation", alert)
		quoted, err := json.Marshal(runbook)
		require.NoError(t, err)
		return string(quoted)
	})
	dir := t.TempDir()
	rules, err := yaml.Marshal(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test.yaml"), []byte(unitTest), 0o600))
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// runbookPlaceholder is RUNBOOK(<alert>) in a promtool unit test.
var runbookPlaceholder = regexp.MustCompile(`RUNBOOK\((\w+)\)`)

// renderedRules renders the chart with values and returns the spec of its
// PrometheusRule: a rule file's content ({groups: [...]}).
func renderedRules(t *testing.T, values map[string]any) map[string]any {
	t.Helper()
	rule := renderChart(t, values).find("PrometheusRule", "webchecker")
	require.NotNil(t, rule)
	spec, ok := rule.Object["spec"].(map[string]any)
	require.True(t, ok)
	return spec
}

// ruleGroups returns the rule groups of a PrometheusRule spec.
func ruleGroups(spec map[string]any) []map[string]any {
	var out []map[string]any
	groups, _ := spec["groups"].([]any)
	for _, g := range groups {
		out = append(out, g.(map[string]any))
	}
	return out
}

// ruleAnnotation returns the annotation key of the alert named alert in
// spec; empty when there is none.
func ruleAnnotation(spec map[string]any, alert, key string) string {
	for _, g := range ruleGroups(spec) {
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			r := r.(map[string]any)
			if r["alert"] == alert {
				annotations, _ := r["annotations"].(map[string]any)
				value, _ := annotations[key].(string)
				return value
			}
		}
	}
	return ""
}
