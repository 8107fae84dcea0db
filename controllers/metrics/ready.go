package metrics

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReadyStates holds, for every checker, the status of its Ready condition
// as the reconciler last wrote or read it: its quorum state, which with
// spec.vantagePoints above 1 follows the majority of its vantage points.
// The checker collector exports it as webchecker_ready for the checkers
// this replica owns at scrape time (and has scheduled), so that the
// series needs no read from the API server at scrape time.
//
// The reconciler sets a checker's state whenever it writes or reads its
// Ready condition and deletes it when it removes the checker; a state of a
// checker this replica does not own is kept but not exported, so that it
// is ready again if the ring gives the checker back. Only True and False
// are kept: Unknown (and any other status) forgets the checker, whose
// series is then absent. A nil *ReadyStates keeps nothing. Its methods are
// safe for concurrent use; a scrape takes one read lock per owned checker.
type ReadyStates struct {
	mu    sync.RWMutex
	ready map[types.NamespacedName]bool
}

// NewReadyStates returns an empty ReadyStates.
func NewReadyStates() *ReadyStates {
	return &ReadyStates{ready: map[types.NamespacedName]bool{}}
}

// Set records the status of the checker's Ready condition: True and False
// are kept, Unknown (or any other value) forgets the checker.
func (s *ReadyStates) Set(key types.NamespacedName, ready metav1.ConditionStatus) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ready {
	case metav1.ConditionTrue:
		s.ready[key] = true
	case metav1.ConditionFalse:
		s.ready[key] = false
	default:
		delete(s.ready, key)
	}
}

// Delete forgets the checker.
func (s *ReadyStates) Delete(key types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ready, key)
}

// Len returns the number of checkers whose state is kept (True or False).
func (s *ReadyStates) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.ready)
}

// get returns whether the checker is ready, and false as its second value
// when its state is not known (never set, Unknown, or deleted).
func (s *ReadyStates) get(key types.NamespacedName) (ready, known bool) {
	if s == nil {
		return false, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ready, known = s.ready[key]
	return ready, known
}
