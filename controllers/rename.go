package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"

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
// never hold the reconcile workers a verdict change needs.

// renameDelay is how long a rename waits before it is queued again at low
// priority: next to nothing, the queue decides when it is written.
const renameDelay = time.Millisecond

// maxRenamesInFlight bounds the renames written at once, and
// renameBusyDelay is how long one waits when that many are: the other
// reconcile workers, and the namespace's share of them, stay free for the
// writes that change a verdict, however slow the API server answers. Two
// writes in flight keep up with --kube-api-qps 100 while a write takes
// less than 20 ms.
const (
	maxRenamesInFlight = 2
	renameBusyDelay    = 20 * time.Millisecond
)

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
// time, or while maxRenamesInFlight renames are being written, waits: later
// is positive, and the caller requeues it with renameResult. Otherwise the
// rename is written now, and the caller calls release once it is.
func (r *WebCheckerReconciler) renameTurn(key types.NamespacedName, generation int64, stored, desired *webcheckerv1alpha1.WebCheckerStatus) (release func(), later time.Duration) {
	if !renameOnly(stored, desired) {
		return func() {}, 0
	}
	if r.ledger().holdRename(key, generation) {
		return nil, renameDelay
	}
	if r.renaming.Add(1) > maxRenamesInFlight {
		r.renaming.Add(-1)
		return nil, renameBusyDelay
	}
	return func() { r.renaming.Add(-1) }, 0
}

// renameResult requeues a rename after later, behind every other
// reconcile.
func renameResult(later time.Duration) ctrl.Result {
	return ctrl.Result{RequeueAfter: later, Priority: ptr.To(handler.LowPriority)}
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
