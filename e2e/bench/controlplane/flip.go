package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/networkio/webchecker/e2e/bench/report"
)

// flip makes every flipEvery-th healthy target fail and measures the
// status writes until all those checkers show Ready=False, and how long
// that took.
func (e *env) flip(ctx context.Context) ([]report.Row, error) {
	want := readyWant{}
	var flipped []int
	seen := 0
	for i, ok := range e.healthy {
		if !ok {
			continue
		}
		if seen%e.opts.flipEvery == 0 {
			flipped = append(flipped, i)
			want[nameOf(i)] = metav1.ConditionFalse
		}
		seen++
	}
	before, err := e.readAPICounts(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for _, i := range flipped {
		e.healthy[i] = false
		e.targets.setFailing(i, true)
	}
	doneAt, _, err := e.waitReflected(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("waiting for the flipped checkers: %w", err)
	}
	after, err := e.readAPICounts(ctx)
	if err != nil {
		return nil, err
	}
	writes := after.sub(before).statusWrites
	modified := e.modifiedBetween(start, doneAt)
	n := float64(len(flipped))
	goal := fmt.Sprintf("= %d", len(flipped))
	return []report.Row{
		{Name: "flipped checkers", Value: n, Unit: "checkers"},
		{Name: "until all show False", Value: doneAt.Sub(start).Seconds(), Unit: "s"},
		{Name: "status writes (API server)", Value: writes, Unit: "writes", Goal: goal, Met: report.Met(writes == n)},
		{Name: "status writes (watch MODIFIED)", Value: float64(modified), Unit: "events", Goal: goal, Met: report.Met(float64(modified) == n)},
	}, nil
}
