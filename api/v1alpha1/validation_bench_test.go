package v1alpha1_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/yaml"
)

// BenchmarkStatusWriteValidation measures what the API server spends on
// the CRD's CEL rules (x-kubernetes-validations) for one status write of a
// typical http WebChecker: it evaluates every rule of the object, those of
// the spec too, on each status write, as the apiextensions status strategy
// does (with ratcheting). A status write is what a replica makes for every
// checker it creates, takes over or sees change, so this is per write on
// the cluster's API server. Run with:
//
//	go test ./api/v1alpha1 -run '^$' -bench StatusWriteValidation -benchmem
func BenchmarkStatusWriteValidation(b *testing.B) {
	validator, structural := webCheckerValidator(b)
	old := typicalChecker("replica-a")
	updated := typicalChecker("replica-b")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		correlated := common.NewCorrelatedObject(updated, old, &model.Structural{Structural: structural})
		errs, _ := validator.Validate(ctx, nil, structural, updated, old, celconfig.RuntimeCELCostBudget, cel.WithRatcheting(correlated))
		if len(errs) > 0 {
			b.Fatalf("the typical checker is invalid: %v", errs)
		}
	}
}

// webCheckerValidator builds the API server's CEL validator of the
// WebChecker CRD as generated under config/crd/bases.
func webCheckerValidator(tb testing.TB) (*cel.Validator, *structuralschema.Structural) {
	tb.Helper()
	data, err := os.ReadFile("../../config/crd/bases/test.network.io_webcheckers.yaml")
	require.NoError(tb, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(tb, yaml.Unmarshal(data, &crd))
	require.Len(tb, crd.Spec.Versions, 1)
	var props apiextensions.JSONSchemaProps
	require.NoError(tb, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &props, nil))
	structural, err := structuralschema.NewStructural(&props)
	require.NoError(tb, err)
	return cel.NewValidator(structural, true, celconfig.PerCallLimit), structural
}

// typicalChecker is an http WebChecker as a user writes one, with the
// status its owner shard writes.
func typicalChecker(shard string) map[string]any {
	return map[string]any{
		"apiVersion": "test.network.io/v1alpha1",
		"kind":       "WebChecker",
		"metadata":   map[string]any{"name": "api", "namespace": "team-a", "generation": int64(1)},
		"spec": map[string]any{
			"host":                "https://api.example.com",
			"path":                "/healthz",
			"method":              "GET",
			"interval":            "10s",
			"timeout":             "5s",
			"expectedStatusCodes": []any{int64(200)},
		},
		"status": map[string]any{
			"shard":              shard,
			"observedGeneration": int64(1),
			"httpStatusCode":     int64(200),
			"conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "ProbeSucceeded", "message": "WebChecker is ready",
				"lastTransitionTime": "2026-12-06T10:00:00Z", "observedGeneration": int64(1),
			}},
		},
	}
}
