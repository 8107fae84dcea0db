package scheduler_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// TestProbeStartedBeforeTheStopFinishes: a probe in flight when Start's
// context ends is given scheduler.StopGrace to finish instead of being
// cancelled with it. Its turn counts as started (StoppedProbing reports an
// instant after it, so that no other replica makes it up): were the probe
// cancelled before its request left, that turn would be probed by nobody.
// A probe that outlasts the grace is cancelled.
func TestProbeStartedBeforeTheStopFinishes(t *testing.T) {
	for name, tc := range map[string]struct {
		takes         time.Duration
		wantCancelled bool
	}{
		"finishes within the grace": {takes: 100 * time.Millisecond},
		"outlasts the grace":        {takes: scheduler.StopGrace + 10*time.Second, wantCancelled: true},
	} {
		t.Run(name, func(t *testing.T) {
			entered := make(chan struct{})
			var once sync.Once
			var finished, cancelled atomic.Bool
			h := newHarness(t, func(_ *harness, o *scheduler.Options) {
				o.Rand = zeroRand
				o.Prober = probing.ProberFunc(func(ctx context.Context, _ probing.Target) probing.Result {
					once.Do(func() { close(entered) })
					select {
					case <-time.After(tc.takes):
						finished.Store(true)
					case <-ctx.Done():
						cancelled.Store(true)
					}
					return probing.Result{Success: true, Reason: probing.ReasonSucceeded}
				})
			})
			h.s.Upsert(checkN(0, 1, 10*time.Second, "v1"))
			h.start()
			select {
			case <-entered:
			case <-time.After(waitFor):
				t.Fatal("the check was not probed")
			}
			started := time.Now()
			h.stop()
			assert.Equal(t, tc.wantCancelled, cancelled.Load(), "cancelled")
			assert.Equal(t, !tc.wantCancelled, finished.Load(), "finished")
			if tc.wantCancelled {
				assert.GreaterOrEqual(t, time.Since(started), scheduler.StopGrace, "cancelled before the grace was over")
			}
			at, ok := h.s.StoppedProbing(context.Background())
			require.True(t, ok)
			assert.True(t, at.After(t0) || at.Equal(t0), "the probed turn (due %s) counts as started: stopped at %s", t0, at)
		})
	}
}
