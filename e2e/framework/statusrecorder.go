package framework

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// StatusEvent is one watch event on a WebChecker: its creation, one write,
// or its deletion.
type StatusEvent struct {
	// At is when the watch delivered it.
	At   time.Time
	Type watch.EventType
	Name string
	// Shard is the object's status.shard, RV its resourceVersion and
	// Ready the status of its Ready condition ("" without one).
	Shard string
	RV    string
	Ready metav1.ConditionStatus
}

// ReadyOf returns the status of wc's Ready condition, "" without one.
func ReadyOf(wc *webcheckerv1alpha1.WebChecker) metav1.ConditionStatus {
	return ReadyCondition(wc).Status
}

// ReadyCondition returns wc's Ready condition, the zero value without one.
func ReadyCondition(wc *webcheckerv1alpha1.WebChecker) metav1.Condition {
	if c := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// StatusRecorder records every watch event on the WebCheckers of a
// namespace, resuming the watch from the last resourceVersion when the API
// server closes it.
type StatusRecorder struct {
	mu     sync.Mutex
	events []StatusEvent
	errs   []error

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// StartStatusRecorder lists the WebCheckers of ns and records every event
// from then on, until Stop.
func StartStatusRecorder(ctx context.Context, c client.WithWatch, ns string) (*StatusRecorder, error) {
	var list webcheckerv1alpha1.WebCheckerList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing WebCheckers: %w", err)
	}
	rv := list.ResourceVersion
	w, err := watchFrom(ctx, c, ns, rv)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &StatusRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			rv = r.drain(ctx, w, rv)
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			for {
				if w, err = watchFrom(ctx, c, ns, rv); err == nil {
					break
				}
				r.fail(err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}()
	return r, nil
}

func watchFrom(ctx context.Context, c client.WithWatch, ns, rv string) (watch.Interface, error) {
	w, err := c.Watch(ctx, &webcheckerv1alpha1.WebCheckerList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		return nil, fmt.Errorf("watching WebCheckers from resourceVersion %s: %w", rv, err)
	}
	return w, nil
}

// drain records the events of w until it closes and returns the last
// resourceVersion seen.
func (r *StatusRecorder) drain(ctx context.Context, w watch.Interface, rv string) string {
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			now := time.Now()
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				wc, ok := ev.Object.(*webcheckerv1alpha1.WebChecker)
				if !ok {
					r.fail(fmt.Errorf("unexpected watch object %T", ev.Object))
					continue
				}
				rv = wc.ResourceVersion
				r.mu.Lock()
				r.events = append(r.events, StatusEvent{At: now, Type: ev.Type, Name: wc.Name, Shard: wc.Status.Shard, RV: rv, Ready: ReadyOf(wc)})
				r.mu.Unlock()
			case watch.Error:
				r.fail(fmt.Errorf("watch error: %w", apierrors.FromObject(ev.Object)))
				// A resourceVersion too old cannot be resumed: the events in
				// between are lost, which Errors reports.
				return rv
			}
		}
	}
}

func (r *StatusRecorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// Stop ends the watch and waits for it to be gone. It may be called more
// than once.
func (r *StatusRecorder) Stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
}

// Snapshot returns a copy of the events recorded so far, in arrival order.
func (r *StatusRecorder) Snapshot() []StatusEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Len returns how many events were recorded so far: a caller that polls
// can pass it to Since later and read only what is new.
func (r *StatusRecorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Since returns a copy of the events after the first n.
func (r *StatusRecorder) Since(n int) []StatusEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n >= len(r.events) {
		return nil
	}
	return slices.Clone(r.events[max(n, 0):])
}

// Errors returns the errors that interrupted the watch: while there are
// any, events may be missing.
func (r *StatusRecorder) Errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// FirstWrites returns, per checker, when the watch first showed
// status.shard == want[name] at or after since.
func (r *StatusRecorder) FirstWrites(since time.Time, want map[string]string) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := map[string]time.Time{}
	for _, ev := range r.events {
		if ev.At.Before(since) || ev.Shard == "" || ev.Shard != want[ev.Name] {
			continue
		}
		if _, seen := first[ev.Name]; !seen {
			first[ev.Name] = ev.At
		}
	}
	return first
}
