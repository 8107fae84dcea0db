package controllers_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// TestPaceReportedByEventsAlone: when a checker's probes stop keeping
// their turns (its outcome Behind or Overran, with the same result) the
// replica records one Warning Event, and a Normal one when they keep them
// again; it writes nothing to the status for it, and records nothing more
// however often the checker is reconciled.
func TestPaceReportedByEventsAlone(t *testing.T) {
	t.Parallel()
	_, _, key := startChecker(t, "pace", "/")
	handOverFromSuite(t, key)
	wc := getChecker(t, key)

	a := newTakeover(t)
	up := scheduler.Outcome{Key: key, Generation: wc.Generation, Time: time.Now(),
		Result: probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}}
	a.reconcile(t, key)
	a.held.probed(up)
	a.reconcile(t, key) // replica-a writes its probe
	require.Len(t, a.recorder.Events, 0)
	written := getChecker(t, key)
	require.Equal(t, "replica-a", written.Status.Shard)

	steps := []struct {
		name            string
		behind, overran bool
		want            string // the Event's reason, "" for none
	}{
		{"falls behind", true, false, controllers.EventReasonProbesBehind},
		{"still behind", true, false, ""},
		{"overruns too", true, true, controllers.EventReasonProbeOverran},
		{"keeps its turns again", false, false, controllers.EventReasonProbesOnSchedule},
		{"still keeps them", false, false, ""},
	}
	for _, step := range steps {
		o := up
		o.Time, o.Behind, o.Overran = time.Now(), step.behind, step.overran
		a.held.probed(o)
		a.reconcile(t, key)
		a.reconcile(t, key) // a second reconcile of the same outcome
		if step.want == "" {
			assert.Empty(t, a.recorder.Events, step.name)
		} else if assert.Len(t, a.recorder.Events, 1, step.name) {
			assert.Contains(t, <-a.recorder.Events, step.want, step.name)
		}
		assert.Equal(t, written.ResourceVersion, getChecker(t, key).ResourceVersion, "%s: the status was written", step.name)
	}
}
