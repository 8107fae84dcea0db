package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing/scheduler"
)

// 9. Ten thousand checks, four workers, and a slow consumer that calls back
// into the scheduler for every notification: every first outcome arrives,
// nothing deadlocks.
func TestScaleNoDeadlock(t *testing.T) {
	const (
		n        = 10000
		interval = 30 * time.Second
		deadline = 60 * time.Second
	)
	notifyCh := make(chan types.NamespacedName) // unbuffered
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Workers = 4
		o.InitialJitter = time.Second
		o.Logger = logr.Discard()
		o.Notify = func(ctx context.Context, key types.NamespacedName) {
			select {
			case notifyCh <- key:
			case <-ctx.Done():
			}
		}
	})
	checks := make(map[types.NamespacedName]scheduler.Check, n)
	for i := range n {
		checks[keyN(i)] = checkN(i, 1, interval, "v1")
	}

	// Concurrent Upserts before Start.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				h.s.Upsert(checks[keyN(i)])
			}
		})
	}
	wg.Wait()
	require.Equal(t, n, h.s.Len())
	consumer := startSlowConsumer(t, h.s, notifyCh, checks)

	h.start()
	h.step(time.Second) // every first probe is now due

	select {
	case <-consumer.all:
	case <-time.After(deadline):
		t.Fatalf("stalled: only %d of %d first outcomes delivered within %v (deadlock?)", consumer.delivered.Load(), n, deadline)
	}
	require.Zero(t, consumer.problems.Load(), "Latest missing or duplicate notification")
	require.Equal(t, n, h.prober.numCalls())

	// A second round with unchanged outcomes: every check is probed again,
	// nobody is notified but the checks whose pace changed (with 4 workers
	// for 10,000 checks due at once, which of them waited for a worker
	// differs from one round to the next: Outcome.Behind).
	h.step(interval)
	require.Eventually(t, func() bool {
		return h.prober.numCalls() == 2*n
	}, deadline, 10*time.Millisecond, "second round of probes")
	time.Sleep(settle)
	h.stop()
	assert.Equal(t, int64(n), consumer.delivered.Load()-consumer.paceChanges.Load(), "unchanged outcomes notified")
	assert.Zero(t, consumer.problems.Load(), "Latest missing or unchanged outcome notified")
	assert.Equal(t, 2*n, h.prober.numCalls())
}

// slowConsumer stands in for the reconciler of TestScaleNoDeadlock: for
// every key it receives it reads Latest and re-upserts the (unchanged)
// check, slowly.
type slowConsumer struct {
	delivered atomic.Int64
	// paceChanges counts the notifications of outcomes that differ from
	// the one notified before only in Behind or Overran.
	paceChanges atomic.Int64
	problems    atomic.Int64  // a missing Latest, or a key notified twice with the same pace
	all         chan struct{} // closed once every check was delivered once
	stop        chan struct{}
	done        chan struct{}
}

// startSlowConsumer consumes keys until the test ends, calling back into s.
func startSlowConsumer(t *testing.T, s *scheduler.Scheduler, keys <-chan types.NamespacedName, checks map[types.NamespacedName]scheduler.Check) *slowConsumer {
	c := &slowConsumer{all: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(s, keys, checks)
	t.Cleanup(func() {
		close(c.stop)
		select {
		case <-c.done:
		case <-time.After(waitFor):
			t.Error("consumer stuck (in a scheduler call?)")
		}
	})
	return c
}

func (c *slowConsumer) run(s *scheduler.Scheduler, keys <-chan types.NamespacedName, checks map[types.NamespacedName]scheduler.Check) {
	defer close(c.done)
	seen := make(map[types.NamespacedName]int, len(checks))
	pace := make(map[types.NamespacedName][2]bool, len(checks))
	for {
		select {
		case <-c.stop:
			return
		case key := <-keys:
			out, ok := s.Latest(key)
			if !ok {
				c.problems.Add(1)
			}
			s.Upsert(checks[key])
			_ = s.Len()
			seen[key]++
			now, before := [2]bool{out.Behind, out.Overran}, pace[key]
			pace[key] = now
			switch {
			case seen[key] == 1:
			case now != before:
				c.paceChanges.Add(1)
			default:
				c.problems.Add(1) // an unchanged outcome must not be notified again
			}
			if d := c.delivered.Add(1); d == int64(len(checks)) {
				close(c.all)
			} else if d%100 == 0 {
				time.Sleep(time.Millisecond)
			} else {
				runtime.Gosched()
			}
		}
	}
}

// Upsert, Remove, Latest and Len from many goroutines while probes run; meant
// for -race. Afterwards the scheduler knows exactly the surviving checks and
// never probed a checker twice at once.
func TestConcurrentUse(t *testing.T) {
	const keys = 50
	h := newHarness(t, func(_ *harness, o *scheduler.Options) {
		o.Workers = 8
		o.InitialJitter = 100 * time.Millisecond
		o.Logger = logr.Discard()
	})
	h.start()

	stopClock := make(chan struct{})
	clockDone := make(chan struct{})
	go func() {
		defer close(clockDone)
		for {
			select {
			case <-stopClock:
				return
			default:
				h.clock.Step(50 * time.Millisecond)
				time.Sleep(time.Millisecond)
			}
		}
	}()

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 42))
			for range 500 {
				i := r.IntN(keys)
				switch r.IntN(4) {
				case 0:
					h.s.Remove(keyN(i))
				case 1:
					h.s.Upsert(checkN(i, int64(r.IntN(3)+1), time.Second, fmt.Sprintf("v%d", r.IntN(2))))
				case 2:
					if out, ok := h.s.Latest(keyN(i)); ok {
						assert.Equal(t, keyN(i), out.Key)
					}
				default:
					_ = h.s.Len()
				}
				if r.IntN(10) == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()

	// Settle on a known final set: even keys present, odd keys removed.
	for i := range keys {
		if i%2 == 0 {
			h.s.Upsert(checkN(i, 9, time.Second, "final"))
		} else {
			h.s.Remove(keyN(i))
		}
	}
	assert.Equal(t, keys/2, h.s.Len())
	for i := 0; i < keys; i += 2 {
		h.waitLatest(keyN(i), func(o scheduler.Outcome) bool { return o.Generation == 9 }, "final generation probed")
	}
	close(stopClock)
	<-clockDone
	h.stop()

	for i := range keys {
		assert.LessOrEqual(t, h.prober.maxConcurrency(checkerOf(urlN(i, "final"))), 1, "overlapping probes of checker %d", i)
		_, ok := h.s.Latest(keyN(i))
		assert.Equal(t, i%2 == 0, ok, "checker %d", i)
	}
}
