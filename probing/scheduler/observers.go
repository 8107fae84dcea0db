package scheduler

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Observers tells every one of its Observers about every probe, in order:
// one Scheduler, several Observers (metrics, the reconciler's streaks).
type Observers []Observer

var _ Observer = Observers(nil)

// ProbeStarted implements Observer.
func (os Observers) ProbeStarted(key types.NamespacedName, lag time.Duration) {
	for _, o := range os {
		o.ProbeStarted(key, lag)
	}
}

// ProbeFinished implements Observer.
func (os Observers) ProbeFinished(out Outcome) {
	for _, o := range os {
		o.ProbeFinished(out)
	}
}
