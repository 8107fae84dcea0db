// Package report prints a benchmark's figures as an aligned table and
// writes them as JSON, so that a run can be read by a person and compared
// by a program.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one measured figure: what, the value, its unit, and optionally
// the reference it is compared with and the goal it must meet.
type Row struct {
	// Name says what was measured, e.g. "probes per CPU-second (fresh)".
	Name string `json:"name"`
	// Value and Unit are the figure, e.g. 1234.5 and "probes/s".
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Reference, when not empty, names the tool or figure compared with,
	// and Ratio is Value over that reference's value.
	Reference string  `json:"reference,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
	// Goal, when not empty, is the goal in words (e.g. ">= 8x"), and Met
	// whether the figure meets it.
	Goal string `json:"goal,omitempty"`
	Met  *bool  `json:"met,omitempty"`
}

// Met returns a pointer to ok, for Row.Met.
func Met(ok bool) *bool { return &ok }

// Report is one benchmark run.
type Report struct {
	// Bench names the benchmark ("engine", "controlplane").
	Bench string `json:"bench"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Machine describes where it ran.
	Machine Machine `json:"machine"`
	// Params are the run's parameters (sizes, durations, concurrency).
	Params map[string]any `json:"params"`
	// Sections group the rows, in order.
	Sections []Section `json:"sections"`
}

// Section is a titled group of rows.
type Section struct {
	Title string `json:"title"`
	Rows  []Row  `json:"rows"`
}

// Machine describes the machine a run measured.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
}

// New starts a report of bench with params.
func New(bench string, params map[string]any) *Report {
	return &Report{Bench: bench, Started: time.Now().UTC(), Machine: thisMachine(), Params: params}
}

// Add appends rows to the section titled title, creating it if needed.
func (r *Report) Add(title string, rows ...Row) {
	for i := range r.Sections {
		if r.Sections[i].Title == title {
			r.Sections[i].Rows = append(r.Sections[i].Rows, rows...)
			return
		}
	}
	r.Sections = append(r.Sections, Section{Title: title, Rows: rows})
}

// Print writes the report as aligned tables to w.
func (r *Report) Print(w io.Writer) error {
	fmt.Fprintf(w, "# %s bench, %s, %d CPUs (%s), %s\n", r.Bench, r.Started.Format(time.RFC3339), r.Machine.CPUs, r.Machine.CPUModel, r.Machine.GoVersion)
	for _, s := range r.Sections {
		fmt.Fprintf(w, "\n## %s\n", s.Title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "figure\tvalue\tunit\tvs\tratio\tgoal\tmet\t")
		for _, row := range s.Rows {
			ratio, met := "", ""
			if row.Reference != "" {
				ratio = fmt.Sprintf("%.2fx", row.Ratio)
			}
			if row.Met != nil {
				met = map[bool]string{true: "yes", false: "NO"}[*row.Met]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Name, formatValue(row.Value), row.Unit, row.Reference, ratio, row.Goal, met)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("printing %s: %w", s.Title, err)
		}
	}
	return nil
}

// WriteJSON writes the report to dir/<bench>.json, creating dir, and
// returns the file's path.
func (r *Report) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding the %s report: %w", r.Bench, err)
	}
	path := filepath.Join(dir, r.Bench+".json")
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// formatValue prints v with precision that suits its size.
func formatValue(v float64) string {
	switch {
	case v == float64(int64(v)):
		return fmt.Sprintf("%d", int64(v))
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1 || v <= -1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

// thisMachine describes the machine the process runs on.
func thisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(info), "\n") {
			if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				m.CPUModel = strings.TrimSpace(value)
				break
			}
		}
	}
	return m
}
