package gitops

import (
	"context"
	"fmt"
	"os"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// FluxCheck is one entry of a Flux Kustomization's spec.healthCheckExprs:
// the CEL expressions that judge the objects of one kind.
type FluxCheck struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	InProgress string `json:"inProgress,omitempty"`
	Failed     string `json:"failed,omitempty"`
	Current    string `json:"current"`
}

// LoadFluxCheck reads the Kustomization in the YAML file path and returns
// its healthCheckExprs entry for apiVersion and kind.
func LoadFluxCheck(path, apiVersion, kind string) (FluxCheck, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return FluxCheck{}, fmt.Errorf("reading the Flux Kustomization: %w", err)
	}
	var k struct {
		Spec struct {
			HealthCheckExprs []FluxCheck `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return FluxCheck{}, fmt.Errorf("parsing %s: %w", path, err)
	}
	for _, c := range k.Spec.HealthCheckExprs {
		if c.APIVersion == apiVersion && c.Kind == kind {
			return c, nil
		}
	}
	return FluxCheck{}, fmt.Errorf("%s has no healthCheckExprs entry for %s %s", path, apiVersion, kind)
}

// Status is the status Flux's kustomize-controller gives u with these
// expressions: InProgress while status.observedGeneration, when present,
// is not metadata.generation; otherwise that of the first of inProgress,
// failed and current (in this order) that is true, and InProgress when
// none is. As Flux does, the expressions are parsed, not type-checked,
// in Flux's CEL environment, and evaluated with the object's top-level
// fields (metadata, spec, status) as variables. An expression that does
// not evaluate to a bool is an error, which Flux reports instead of a
// status.
func (c FluxCheck) Status(ctx context.Context, u *unstructured.Unstructured) (status.Status, error) {
	obj := u.UnstructuredContent()
	observed, found, err := unstructured.NestedInt64(obj, "status", "observedGeneration")
	if err != nil {
		return "", fmt.Errorf("reading status.observedGeneration: %w", err)
	}
	if found && observed != u.GetGeneration() {
		return status.InProgressStatus, nil
	}
	for _, e := range []struct {
		expr   string
		status status.Status
	}{{c.InProgress, status.InProgressStatus}, {c.Failed, status.FailedStatus}, {c.Current, status.CurrentStatus}} {
		if e.expr == "" {
			continue
		}
		ok, err := evalFluxExpr(ctx, e.expr, obj)
		if err != nil {
			return "", err
		}
		if ok {
			return e.status, nil
		}
	}
	return status.InProgressStatus, nil
}

// evalFluxExpr evaluates the boolean CEL expression expr on obj in the
// environment Flux's runtime/cel package builds.
func evalFluxExpr(ctx context.Context, expr string, obj map[string]any) (bool, error) {
	env, err := cel.NewEnv(cel.HomogeneousAggregateLiterals(), cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true), cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(),
		ext.Strings(), ext.Sets(), ext.Encoders())
	if err != nil {
		return false, fmt.Errorf("creating the CEL environment: %w", err)
	}
	ast, issues := env.Parse(expr)
	if issues != nil && issues.Err() != nil {
		return false, fmt.Errorf("parsing %q: %w", expr, issues.Err())
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	if err != nil {
		return false, fmt.Errorf("building the program of %q: %w", expr, err)
	}
	val, _, err := prog.ContextEval(ctx, obj)
	if err != nil {
		return false, fmt.Errorf("evaluating %q: %w", expr, err)
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, fmt.Errorf("evaluating %q: a %s, not a bool", expr, val.Type())
	}
	return bool(b), nil
}
