package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
)

// Waiting without a worker: a reconcile that may not go on now (its
// namespace holds its share of the reconcile workers, or the renames in
// flight are at their bound) returns without a requeue and waits in a
// line; when a turn frees, it is reserved for the oldest waiting checker,
// which is queued again (through the Trigger) and takes its turn when its
// reconcile runs. Nothing spins: a checker in line costs a map entry until
// its turn, however long the line.

// keyLine is a first-in, first-out line of checkers, each in it at most
// once. The zero value is an empty line.
type keyLine struct {
	keys   []types.NamespacedName
	queued map[types.NamespacedName]bool
}

// push adds key at the end of the line, unless it is in it already.
func (l *keyLine) push(key types.NamespacedName) {
	if l.queued[key] {
		return
	}
	if l.queued == nil {
		l.queued = map[types.NamespacedName]bool{}
	}
	l.queued[key] = true
	l.keys = append(l.keys, key)
}

// pop takes the oldest key out of the line; ok is false when it is empty.
func (l *keyLine) pop() (key types.NamespacedName, ok bool) {
	if len(l.keys) == 0 {
		return types.NamespacedName{}, false
	}
	key = l.keys[0]
	l.keys[0] = types.NamespacedName{}
	l.keys = l.keys[1:]
	delete(l.queued, key)
	if len(l.keys) == 0 {
		l.keys = nil // let the backing array go
	}
	return key, true
}

// len returns how many keys wait in the line.
func (l *keyLine) len() int { return len(l.keys) }

// turns holds the turns handed to checkers that waited in a line: reserved
// until the checker's reconcile takes its turn, and to be woken (queued
// again) until the caller drains them. The zero value holds none.
type turns struct {
	reserved map[types.NamespacedName]bool
	woken    []types.NamespacedName
}

// hand reserves a turn for key, to be woken.
func (t *turns) hand(key types.NamespacedName) {
	if t.reserved == nil {
		t.reserved = map[types.NamespacedName]bool{}
	}
	t.reserved[key] = true
	t.woken = append(t.woken, key)
}

// take reports whether a turn was reserved for key, and takes it.
func (t *turns) take(key types.NamespacedName) bool {
	if !t.reserved[key] {
		return false
	}
	delete(t.reserved, key)
	return true
}

// drain returns the keys handed a turn since the last call.
func (t *turns) drain() []types.NamespacedName {
	woken := t.woken
	t.woken = nil
	return woken
}

// wakeWaiting ends key's reconcile for the lines it may have held a turn
// of: it calls release (its namespace's reconcile slot), gives back a
// rename's turn reserved for key that its reconcile did not take, and
// queues a reconcile of every checker a turn was handed to meanwhile.
func (r *WebCheckerReconciler) wakeWaiting(ctx context.Context, key types.NamespacedName, release func()) {
	release()
	woken := r.renames.done(key)
	woken = append(woken, r.fairness().woken()...)
	if r.Trigger == nil {
		return
	}
	for _, next := range woken {
		r.Trigger.Notify(ctx, next)
	}
}
