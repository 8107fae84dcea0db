package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// TestObservers tells every Observer about every probe, in order.
func TestObservers(t *testing.T) {
	first, second := &recordingObserver{}, &recordingObserver{}
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	os := scheduler.Observers{first, second}
	os.ProbeStarted(key, time.Second)
	os.ProbeFinished(scheduler.Outcome{Key: key, Result: probing.Result{Success: true}})
	for name, o := range map[string]*recordingObserver{"first": first, "second": second} {
		lags, finished := o.get()
		assert.Equal(t, []time.Duration{time.Second}, lags, name)
		assert.Equal(t, []probing.Result{{Success: true}}, finished, name)
	}
	scheduler.Observers(nil).ProbeStarted(key, 0) // no Observer: nothing to tell
}
