package membership

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// probingStopped returns the instant from which this replica, shutting
// down, started no probe (see HeartbeatOptions.ProbingStopped): when it
// was fenced, if it is (a fenced replica does not probe), otherwise
// ProbingStopped's answer within probingStopWait. Zero means unknown.
func (h *Heartbeat) probingStopped(log logr.Logger) time.Time {
	h.mu.Lock()
	fenced, since := h.fenced, h.fencedSince
	h.mu.Unlock()
	if fenced || h.opts.ProbingStopped == nil {
		return since // zero when not fenced: unknown
	}
	ctx, cancel := context.WithTimeout(context.Background(), probingStopWait)
	defer cancel()
	at, ok := h.opts.ProbingStopped(ctx)
	if !ok {
		log.Info("Probing did not stop in time; the others take over from when they see the Lease deleted", "waited", probingStopWait)
		return time.Time{}
	}
	// Fenced while waiting (its last renewal too old): it started no
	// probe since then.
	h.mu.Lock()
	if h.fenced && h.fencedSince.Before(at) {
		at = h.fencedSince
	}
	h.mu.Unlock()
	return at
}

// release deletes the Lease, if it is still ours: it reads the Lease,
// leaves it alone when another replica holds it, marks it with the instant
// this replica stopped probing, if known (AnnotationProbingStopped, see
// markStopped), and deletes it on the condition that its UID and
// resourceVersion are still the ones read or written, so that a Lease
// taken over or renewed by another writer in between (a successor with
// the same shard id, such as a restarted StatefulSet pod) survives.
func (h *Heartbeat) release(log logr.Logger, stopped time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	leases := h.opts.Client.Leases(h.opts.Namespace)
	lease, err := leases.Get(ctx, h.opts.ID, metav1.GetOptions{})
	if err == nil {
		if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != h.opts.ID {
			log.Info("Lease held by another replica, not releasing it", "holder", holder)
			return
		}
		if !stopped.IsZero() {
			lease, err = h.markStopped(ctx, log, lease, stopped)
		}
	}
	if err == nil {
		err = leases.Delete(ctx, h.opts.ID, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion},
		})
	}
	switch {
	case err == nil:
		log.Info("Released lease", "probingStoppedAt", stopped)
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		log.Info("Lease changed by another writer, not releasing it")
	default:
		log.Error(err, "Releasing lease failed; the others take over when it expires")
	}
}

// markStopped writes the instant this replica stopped probing on its
// Lease (AnnotationProbingStopped), which the others read from the deleted
// Lease, and returns the Lease as written. An update that fails but for a
// conflict is logged, and the Lease is released without the instant: the
// others then take over from when they see it deleted.
func (h *Heartbeat) markStopped(ctx context.Context, log logr.Logger, lease *coordinationv1.Lease, stopped time.Time) (*coordinationv1.Lease, error) {
	marked := lease.DeepCopy()
	if marked.Annotations == nil {
		marked.Annotations = map[string]string{}
	}
	marked.Annotations[AnnotationProbingStopped] = stopped.UTC().Format(time.RFC3339Nano)
	updated, err := h.opts.Client.Leases(h.opts.Namespace).Update(ctx, marked, metav1.UpdateOptions{})
	switch {
	case err == nil:
		return updated, nil
	case apierrors.IsConflict(err):
		return nil, err
	default:
		log.Error(err, "Marking the lease with when probing stopped failed; releasing it without", "probingStoppedAt", stopped)
		return lease, nil
	}
}
