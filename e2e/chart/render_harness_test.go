package chart_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

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
