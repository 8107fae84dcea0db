// Package checkspec translates a WebChecker's spec into what the scheduler
// probes: a scheduler.Check with its probing.Target (CheckFor,
// CheckBuilder), and the thresholds or failure window that damp its Ready
// condition (ThresholdsFor).
//
// The translation resolves every default declared in api/v1alpha1 (an
// object stored before the CRD carried a default still gets it), reads the
// Secret values the spec refers to (SecretValues), compiles the regular
// expressions and spec.conditions under the bounds of the pattern package
// (JudgeCache), applies the operator's default proxy (DefaultProxy) and a
// Namespace's egress allowance (EgressAllowAnnotation), all into a
// probing.TargetSpec, which probing.NewTarget then checks and builds, once
// per change of that spec (TargetCache keeps each checker's Target): the
// target's own rules (its URL, methods, status codes, body
// match limits, proxy URL, DNS options) are probing's, not checked here
// again. Between them they re-check what the API server validates: every
// spec field is written by a namespace editor, and an object stored
// before a stricter CRD is still read.
//
// Why a spec cannot be probed is a typed error the reconciler reports on
// the Ready condition: *SecretError, *ConditionError,
// *RegexTooComplexError, *EgressAllowanceError; a *SecretReadError is a
// read a retry may fix, any other error an invalid spec.
//
// It is used by the reconciler (package controllers), the engine bench and
// the tests; it knows nothing of reconciling or status.
package checkspec
