package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
	"github.com/networkio/webchecker/sharding"
)

// TestHandOverNeverWaitsForTheController: with the controller's Trigger
// full, the assigner's notifications of 5,000 lost checkers return at
// once, having disowned each in the scheduler; once the controller reads
// again, every checker is handed to it once, however often it changed.
func TestHandOverNeverWaitsForTheController(t *testing.T) {
	sched, err := scheduler.New(scheduler.Options{Prober: probing.ProberFunc(func(context.Context, probing.Target) probing.Result { return probing.Result{} })})
	require.NoError(t, err)
	trigger := controllers.NewTrigger(1)
	trigger.Notify(t.Context(), types.NamespacedName{Namespace: "ns", Name: "outcome"}) // full: a probe outcome waits
	h := newHandOver(trigger)
	h.scheduler = sched

	const checkers = 5000
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("wc-%d", i)}
	}
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		for round := range 2 { // every checker changes twice before the controller reads
			for i := range checkers {
				h.notify(t.Context(), sharding.Change{Key: key(i), Probes: round == 1})
			}
		}
	}()
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("the notifications wait for the controller")
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.Start(ctx) }()
	seen := map[types.NamespacedName]int{}
	deadline := time.After(30 * time.Second)
	for len(seen) < checkers+1 {
		select {
		case ev := <-trigger:
			seen[types.NamespacedName{Namespace: ev.Object.Namespace, Name: ev.Object.Name}]++
		case <-deadline:
			t.Fatalf("%d of %d checkers handed to the controller", len(seen), checkers+1)
		}
	}
	cancel()
	require.NoError(t, <-done)
	for k, n := range seen {
		assert.Equal(t, 1, n, "%s handed over %d times", k, n)
	}
}
