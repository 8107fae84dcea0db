package scheduler_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// BenchmarkKeptCheckBytes measures what the schedule holds for a check its
// replica does not probe, which every replica keeps for every checker so
// that a hand-over waits for nothing: 100,000 checks without targets, as
// the reconciler upserts them for the checkers probed elsewhere, each on
// its grid with one turn queued. Reported as bytes of live heap per check
// (after a garbage collection), with the names shared as the informer's
// cache shares them; an op is one such schedule built and dropped.
func BenchmarkKeptCheckBytes(b *testing.B) {
	const checks = 100_000
	keys := make([]types.NamespacedName, checks)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: "team-a", Name: fmt.Sprintf("wc-%06d", i)}
	}
	var perCheck float64
	for b.Loop() {
		before := liveHeap()
		s, err := scheduler.New(scheduler.Options{
			Prober: probing.ProberFunc(func(_ context.Context, _ probing.Target) probing.Result { return probing.Result{} }),
			Clock:  clocktesting.NewFakeClock(time.Now()),
			Owns:   func(types.NamespacedName, int, time.Time) bool { return false },
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, key := range keys {
			s.Upsert(scheduler.Check{Key: key, Generation: 1, Interval: time.Minute, VantagePoints: 1})
		}
		perCheck = (float64(liveHeap()) - float64(before)) / checks
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perCheck, "B/check")
}
