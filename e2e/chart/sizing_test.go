package chart_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/networkio/webchecker/e2e/chart"
)

// sizingRow is a row of the table next to sizing.expectedCheckers in
// values.yaml: "#  10,000  80Mi  160Mi".
var sizingRow = regexp.MustCompile(`(?m)^\s*#\s+([0-9,]+)\s+([0-9]+Mi)\s+([0-9]+Mi)\s*$`)

// TestChartSizingFollowsExpectedCheckers renders the chart with every
// sizing.expectedCheckers of the table that values.yaml shows users and
// checks that the Deployment asks for that memory request and limit (the
// limit also GOMEMLIMIT), keeping the rest of resources; without the
// value, resources stays as written.
func TestChartSizingFollowsExpectedCheckers(t *testing.T) {
	dir, err := chart.Dir()
	require.NoError(t, err)
	values, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	require.NoError(t, err)
	rows := sizingRow.FindAllStringSubmatch(string(values), -1)
	require.GreaterOrEqual(t, len(rows), 4, "the sizing table in values.yaml")

	for _, row := range rows {
		checkers, err := strconv.Atoi(strings.ReplaceAll(row[1], ",", ""))
		require.NoError(t, err)
		t.Run(row[1], func(t *testing.T) {
			c := managerContainer(t, renderChart(t, map[string]any{
				"sizing":    map[string]any{"expectedCheckers": checkers},
				"resources": map[string]any{"limits": map[string]any{"cpu": "2"}},
			}))
			assert.Equal(t, resource.MustParse(row[2]), c.Resources.Requests["memory"], "request")
			assert.Equal(t, resource.MustParse(row[3]), c.Resources.Limits["memory"], "limit")
			assert.Equal(t, resource.MustParse("50m"), c.Resources.Requests["cpu"], "the default CPU request stays")
			assert.Equal(t, resource.MustParse("2"), c.Resources.Limits["cpu"], "a CPU limit of the user stays")
			assert.True(t, hasMemoryLimitEnv(c.Env), "GOMEMLIMIT follows the derived limit")
		})
	}

	c := managerContainer(t, renderChart(t, nil))
	assert.Equal(t, resource.MustParse("64Mi"), c.Resources.Requests["memory"])
	assert.Equal(t, resource.MustParse("256Mi"), c.Resources.Limits["memory"])
}

// hasMemoryLimitEnv reports whether env sets GOMEMLIMIT from the
// container's memory limit.
func hasMemoryLimitEnv(env []corev1.EnvVar) bool {
	for _, e := range env {
		if e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			return e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
		}
	}
	return false
}
