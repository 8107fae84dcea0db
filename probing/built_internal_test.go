package probing

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// mustTarget builds spec, failing the test when NewTarget refuses it.
func mustTarget(t testing.TB, spec TargetSpec) Target {
	t.Helper()
	target, err := NewTarget(spec)
	require.NoError(t, err)
	return target
}

// mustBuild is mustTarget for the helpers that take what NewTarget built.
func mustBuild(t testing.TB, spec TargetSpec) *builtTarget {
	t.Helper()
	return mustTarget(t, spec).b
}
