package report

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReportPrintsAndWritesJSON(t *testing.T) {
	r := New("engine", map[string]any{"concurrency": 8})
	r.Add("fresh connection",
		Row{Name: "probes/s", Value: 1234.5, Unit: "1/s", Reference: "blackbox exporter", Ratio: 9.5, Goal: ">= 8x", Met: Met(true)},
		Row{Name: "lag p99", Value: 0.012, Unit: "s", Goal: "<= 0.05", Met: Met(false)})
	r.Add("fresh connection", Row{Name: "probes", Value: 10000, Unit: "probes"})

	var out bytes.Buffer
	require.NoError(t, r.Print(&out))
	text := out.String()
	for _, want := range []string{"# engine bench", "## fresh connection", "1234", "blackbox exporter", "9.50x", ">= 8x", "yes", "NO", "0.0120", "10000"} {
		assert.Contains(t, text, want)
	}
	require.Len(t, r.Sections, 1)
	assert.Len(t, r.Sections[0].Rows, 3)

	path, err := r.WriteJSON(t.TempDir() + "/bench")
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, "engine", back.Bench)
	assert.Equal(t, 9.5, back.Sections[0].Rows[0].Ratio)
	assert.False(t, *back.Sections[0].Rows[1].Met)
}
