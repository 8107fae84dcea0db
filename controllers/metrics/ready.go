package metrics

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReadyStates holds, for every checker, the status of its Ready condition
// as the reconciler last wrote or read it (its quorum state, which with
// spec.vantagePoints above 1 follows the majority of its vantage points),
// that of its Maintenance condition, and whether it fails while a checker
// it depends on is down. The checker collector exports them as
// webchecker_ready, webchecker_maintenance and webchecker_dependency_down
// for the checkers
// this replica owns at scrape time (and has scheduled), so that the series
// need no read from the API server at scrape time.
//
// The reconciler sets a checker's states whenever it writes or reads its
// conditions and deletes them when it removes the checker; the states of a
// checker this replica does not own are kept but not exported, so that
// they are ready again if the ring gives the checker back. Only True and
// False are kept: Unknown (and any other status, or an absent condition)
// forgets that state, whose series is then absent. A nil *ReadyStates
// keeps nothing. Its methods are safe for concurrent use; a scrape takes
// one read lock per owned checker and series.
type ReadyStates struct {
	mu     sync.RWMutex
	states map[types.NamespacedName]checkerStates
}

// checkerStates are the known conditions of one checker, and whether its
// Ready reason is DependencyDown.
type checkerStates struct {
	ready, maintenance conditionState
	dependencyDown     bool
}

// conditionState is a condition's status: unknown (the zero value), true
// or false.
type conditionState uint8

const (
	stateUnknown conditionState = iota
	stateTrue
	stateFalse
)

func stateOf(status metav1.ConditionStatus) conditionState {
	switch status {
	case metav1.ConditionTrue:
		return stateTrue
	case metav1.ConditionFalse:
		return stateFalse
	default:
		return stateUnknown
	}
}

// NewReadyStates returns an empty ReadyStates.
func NewReadyStates() *ReadyStates {
	return &ReadyStates{states: map[types.NamespacedName]checkerStates{}}
}

// Set records the status of the checker's Ready condition: True and False
// are kept, Unknown (or any other value) forgets it.
func (s *ReadyStates) Set(key types.NamespacedName, ready metav1.ConditionStatus) {
	s.update(key, func(c *checkerStates) { c.ready = stateOf(ready) })
}

// SetMaintenance records the status of the checker's Maintenance
// condition: True and False are kept, anything else (the checker has no
// window) forgets it.
func (s *ReadyStates) SetMaintenance(key types.NamespacedName, maintenance metav1.ConditionStatus) {
	s.update(key, func(c *checkerStates) { c.maintenance = stateOf(maintenance) })
}

// SetDependencyDown records whether the checker's Ready condition is False
// with reason DependencyDown: its own failure while a checker it depends on
// is down.
func (s *ReadyStates) SetDependencyDown(key types.NamespacedName, down bool) {
	s.update(key, func(c *checkerStates) { c.dependencyDown = down })
}

func (s *ReadyStates) update(key types.NamespacedName, change func(*checkerStates)) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.states[key]
	change(&c)
	if c == (checkerStates{}) {
		delete(s.states, key)
		return
	}
	s.states[key] = c
}

// Delete forgets the checker.
func (s *ReadyStates) Delete(key types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.states, key)
}

// Len returns the number of checkers whose Ready state is kept (True or
// False).
func (s *ReadyStates) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, c := range s.states {
		if c.ready != stateUnknown {
			n++
		}
	}
	return n
}

// get returns whether the checker is ready, and false as its second value
// when its state is not known (never set, Unknown, or deleted).
func (s *ReadyStates) get(key types.NamespacedName) (ready, known bool) {
	c := s.of(key)
	return c.ready == stateTrue, c.ready != stateUnknown
}

// inMaintenance returns whether a maintenance window of the checker is
// open, and false as its second value when it has none (or its state is
// not known).
func (s *ReadyStates) inMaintenance(key types.NamespacedName) (open, known bool) {
	c := s.of(key)
	return c.maintenance == stateTrue, c.maintenance != stateUnknown
}

// dependencyDown returns whether the checker fails while a dependency is
// down; only a checker that does is exported.
func (s *ReadyStates) dependencyDown(key types.NamespacedName) (down, known bool) {
	c := s.of(key)
	return c.dependencyDown, c.dependencyDown
}

func (s *ReadyStates) of(key types.NamespacedName) checkerStates {
	if s == nil {
		return checkerStates{}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.states[key]
}
