package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// dashboards are the dashboards the chart ships, by file name.
var dashboards = map[string]func() *dashboard.DashboardBuilder{
	"webchecker-fleet.json":    fleet,
	"webchecker-checker.json":  checker,
	"webchecker-operator.json": operator,
}

// Generate builds every dashboard and returns its JSON by file name,
// indented and with a trailing newline, as it is committed.
func Generate() (map[string][]byte, error) {
	files := map[string][]byte{}
	for name, build := range dashboards {
		d, err := build().Build()
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", name, err)
		}
		data, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", name, err)
		}
		files[name] = append(data, '\n')
	}
	return files, nil
}

// Write writes files into dir and removes the other *.json files there, so
// that a dashboard removed from the generator leaves the chart too.
func Write(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	stale, err := jsonFiles(dir)
	if err != nil {
		return err
	}
	for _, name := range stale {
		if _, ok := files[name]; !ok {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("removing stale dashboard: %w", err)
			}
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("writing dashboard: %w", err)
		}
	}
	return nil
}

// Check returns an error naming every file in dir that differs from files:
// changed, missing, or a *.json file the generator does not produce.
func Check(dir string, files map[string][]byte) error {
	var problems []string
	for _, name := range sortedKeys(files) {
		got, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			problems = append(problems, name+": missing")
		case err != nil:
			return fmt.Errorf("reading dashboard: %w", err)
		case !bytes.Equal(got, files[name]):
			problems = append(problems, name+": differs from the generator's output")
		}
	}
	existing, err := jsonFiles(dir)
	if err != nil {
		return err
	}
	for _, name := range existing {
		if _, ok := files[name]; !ok {
			problems = append(problems, name+": not produced by the generator")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("dashboards in %s are out of date (run make dashboards and commit):\n  %s", dir, strings.Join(problems, "\n  "))
	}
	return nil
}

// jsonFiles lists the names of the *.json files in dir; none when dir does
// not exist.
func jsonFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing dashboards: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
