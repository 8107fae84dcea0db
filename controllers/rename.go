package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// Renames: after a hand-over the new owner of a checker writes its name
// into status.shard with its first result, however alike the verdict is.
// A replica that stops hands thousands of checkers over at once, and most
// of those writes change nothing but the name: they are written after
// every other status write the replica has to make, so that a checker
// whose Ready changes meanwhile never waits behind them. The controller's
// priority queue orders them: a rename is requeued once at
// handler.LowPriority, and written when it comes round again; a change of
// its verdict in between raises it back (the scheduler's notification is
// queued at the default priority) and is written at once, with the name.
// At most maxRenamesInFlight renames are written at once, so that they
// never hold the reconcile workers a verdict change needs; the others wait
// in a renameGate, in the order they came, costing nothing until a write
// ends and wakes the next.

// renameDelay is how long a rename waits before it is queued again at low
// priority: next to nothing, the queue decides when it is written.
const renameDelay = time.Millisecond

// maxRenamesInFlight bounds the renames written at once: the other
// reconcile workers, and the namespace's share of them, stay free for the
// writes that change a verdict, however slow the API server answers. Two
// writes in flight keep up with --kube-api-qps 100 while a write takes
// less than 20 ms.
const maxRenamesInFlight = 2

// shardChanged passes the updates of a checker whose status.shard changed
// from one replica's name to another's: a replica wrote the status over
// another's. Status writes do not trigger reconciles otherwise, and the
// owner must see it. An owner whose cache lagged when it gained the
// checker (a replica thawed after a freeze, or back from a partition,
// reads copies it wrote itself) found its own name there and wrote
// nothing; the name the others wrote meanwhile arrives later, and without
// this would stay until the verdict changes. A checker's first status
// (no name before) is left out: every replica would reconcile every new
// checker once more, and an owner that finds no name writes anyway.
func shardChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok1 := e.ObjectOld.(*webcheckerv1alpha1.WebChecker)
			updated, ok2 := e.ObjectNew.(*webcheckerv1alpha1.WebChecker)
			return ok1 && ok2 && old.Status.Shard != "" && old.Status.Shard != updated.Status.Shard
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// renameOnly reports whether desired differs from stored in status.shard
// and otherwise at most in details (see detailOnly): a write that only
// says who writes now. A status no replica wrote yet is never a rename.
func renameOnly(stored, desired *webcheckerv1alpha1.WebCheckerStatus) bool {
	if stored.Shard == "" || stored.Shard == desired.Shard {
		return false
	}
	named := *desired
	named.Shard = stored.Shard
	return detailOnly(stored, &named)
}

// renameTurn decides when the write of desired over stored, of the
// checker key at generation, is made. A write that is no rename (see
// renameOnly) is made now: release is a no-op. A rename found the first
// time waits: later is positive, and the caller requeues it with
// renameResult. A rename found again while maxRenamesInFlight are being
// written waits in the gate: ok is false, the caller returns without a
// requeue, and the key is reconciled again when its turn comes (see
// wakeWaiting). Otherwise the rename is written now, and the caller calls
// release once it is.
func (r *WebCheckerReconciler) renameTurn(key types.NamespacedName, generation int64, stored, desired *webcheckerv1alpha1.WebCheckerStatus) (release func(), later time.Duration, ok bool) {
	if !renameOnly(stored, desired) {
		return func() {}, 0, true
	}
	if r.ledger().holdRename(key, generation) {
		return nil, renameDelay, false
	}
	if !r.renames.enter(key) {
		return nil, 0, false
	}
	return func() { r.renames.leave() }, 0, true
}

// renameResult requeues a rename after later, behind every other
// reconcile.
func renameResult(later time.Duration) ctrl.Result {
	return ctrl.Result{RequeueAfter: later, Priority: ptr.To(handler.LowPriority)}
}

// renameGate lets at most maxRenamesInFlight renames be written at once.
// A rename over the bound waits in the gate, in the order it came, without
// a reconcile worker or a requeue; a turn that ends is handed to the
// oldest waiting rename, reserved for it until its reconcile takes it (or,
// finding nothing to rename any more, gives it back: see wakeWaiting). The
// zero value is ready to use.
type renameGate struct {
	mu sync.Mutex
	// taken counts the turns being written or reserved.
	taken   int
	waiting keyLine
	handed  turns
}

// enter reports whether the rename of key may be written now: a turn was
// reserved for it, or one is free. Otherwise key waits for a turn.
func (g *renameGate) enter(key types.NamespacedName) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.handed.take(key) {
		return true
	}
	if g.taken < maxRenamesInFlight && g.waiting.len() == 0 {
		g.taken++
		return true
	}
	g.waiting.push(key)
	g.handOn()
	return false
}

// leave ends a turn enter gave, and hands it on.
func (g *renameGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.taken--
	g.handOn()
}

// done ends the turn reserved for key, if its reconcile did not take it,
// and returns the keys turns were handed to since the last call: each
// must be reconciled to take its turn.
func (g *renameGate) done(key types.NamespacedName) (woken []types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.handed.take(key) {
		g.taken--
		g.handOn()
	}
	return g.handed.drain()
}

// handOn reserves the free turns for the oldest waiting renames.
func (g *renameGate) handOn() {
	for g.taken < maxRenamesInFlight {
		key, ok := g.waiting.pop()
		if !ok {
			return
		}
		g.handed.hand(key)
		g.taken++
	}
}

// holdRename reports whether the rename of the checker at generation was
// not held back yet, and holds it back: the next call reports false, until
// this replica writes the checker's status (see wrote).
func (l *ledger) holdRename(key types.NamespacedName, generation int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.of(key, generation)
	if c.renameHeld {
		return false
	}
	c.renameHeld = true
	return true
}
