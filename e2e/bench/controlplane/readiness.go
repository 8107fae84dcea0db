package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/networkio/webchecker/e2e/framework"
)

// readyWant maps a checker's name to the Ready status it must show.
type readyWant map[string]metav1.ConditionStatus

// want returns what every checker's Ready must show now: True for a
// healthy target, False for a failing one.
func (e *env) want() readyWant {
	w := make(readyWant, e.size)
	for i, ok := range e.healthy {
		w[nameOf(i)] = map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}[ok]
	}
	return w
}

// reflection follows the recorded watch events of the checkers in want:
// since when each one's latest Ready matches.
type reflection struct {
	want     readyWant
	read     int                  // events consumed
	matching map[string]time.Time // name -> when its Ready came to match
}

// consume reads the events after the ones already read.
func (r *reflection) consume(events []framework.StatusEvent) {
	for _, ev := range events {
		r.read++
		want, ok := r.want[ev.Name]
		if !ok {
			continue
		}
		switch {
		case ev.Type != watch.Deleted && ev.Ready == want:
			if _, was := r.matching[ev.Name]; !was {
				r.matching[ev.Name] = ev.At
			}
		default:
			delete(r.matching, ev.Name)
		}
	}
}

// done returns whether all match and, if so, when the last came to.
func (r *reflection) done() (time.Time, bool) {
	if len(r.matching) != len(r.want) {
		return time.Time{}, false
	}
	var last time.Time
	for _, at := range r.matching {
		if at.After(last) {
			last = at
		}
	}
	return last, true
}

// waitReflected waits until every checker in want shows its Ready status
// in the watch and returns when the last one came to, as the watch
// delivered it. It returns how many did when it gives up.
func (e *env) waitReflected(ctx context.Context, want readyWant) (time.Time, int, error) {
	r := &reflection{want: want, matching: map[string]time.Time{}}
	deadline := time.Now().Add(e.opts.convergeWithin)
	for {
		r.consume(e.rec.Since(r.read))
		if at, ok := r.done(); ok {
			return at, len(want), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, len(r.matching), fmt.Errorf("after %s, %d of %d checkers show their Ready status (watch errors: %v)",
				e.opts.convergeWithin, len(r.matching), len(want), e.rec.Errors())
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return time.Time{}, len(r.matching), err
		}
	}
}

// modifiedBetween counts the MODIFIED events the watch delivered in
// [from, to]: the status writes (nothing else changes the checkers).
func (e *env) modifiedBetween(from, to time.Time) int {
	n := 0
	for _, ev := range e.rec.Snapshot() {
		if ev.Type == watch.Modified && !ev.At.Before(from) && !ev.At.After(to) {
			n++
		}
	}
	return n
}
