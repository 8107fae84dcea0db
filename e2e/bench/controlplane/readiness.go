package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/networkio/webchecker/e2e/bench/report"
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
	r, err := e.reflect(ctx, want)
	if err != nil {
		return time.Time{}, len(r.matching), err
	}
	at, _ := r.done()
	return at, len(want), nil
}

// reflect waits until every checker in want shows its Ready status in the
// watch, or until --converge-within has passed (an error), and returns
// since when each one that does has shown it.
func (e *env) reflect(ctx context.Context, want readyWant) (*reflection, error) {
	r := &reflection{want: want, matching: map[string]time.Time{}}
	deadline := time.Now().Add(e.opts.convergeWithin)
	for {
		r.consume(e.rec.Since(r.read))
		if _, ok := r.done(); ok {
			return r, nil
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("after %s, %d of %d checkers show their Ready status (watch errors: %v)",
				e.opts.convergeWithin, len(r.matching), len(want), e.rec.Errors())
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return r, err
		}
	}
}

// readyClass is a kind of checker whose time to Ready the bench reports
// apart: what its target does decides how many probes its verdict takes.
type readyClass struct {
	name string
	of   func(e *env, i int) bool
}

// readyClasses are the classes of the bench's checkers, each checker in
// exactly one.
var readyClasses = []readyClass{
	{"answering 200 over http", func(e *env, i int) bool { return e.opts.kindOf(i) == kindHTTP && e.healthy[i] }},
	{"answering 200 over https", func(e *env, i int) bool { return e.opts.kindOf(i) == kindHTTPS && e.healthy[i] }},
	{"answering 500", func(e *env, i int) bool { return e.opts.kindOf(i) != kindHang && !e.healthy[i] }},
	{"never answering", func(e *env, i int) bool { return e.opts.kindOf(i) == kindHang }},
}

// lastReadyRows says, per class with checkers, when the last of them
// showed its Ready status, after since; r holds those that did.
func (e *env) lastReadyRows(r *reflection, since time.Time) []report.Row {
	var rows []report.Row
	for _, class := range readyClasses {
		var last time.Time
		seen, count := 0, 0
		for i := range e.size {
			if !class.of(e, i) {
				continue
			}
			count++
			if at, ok := r.matching[nameOf(i)]; ok {
				seen++
				if at.After(last) {
					last = at
				}
			}
		}
		if count == 0 || seen < count {
			continue
		}
		rows = append(rows, report.Row{Name: fmt.Sprintf("last Ready of the %d %s, after the last create", count, class.name),
			Value: last.Sub(since).Seconds(), Unit: "s"})
	}
	return rows
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
