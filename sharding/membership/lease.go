package membership

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// leaseWriter writes one replica's Lease: it creates it, or updates it as
// last read or written (so that a renewal is one request, with the
// resourceVersion of the previous write as optimistic lock). Every write
// sets the ring's label and the zone's label, or removes the latter when
// the zone is unknown, so that a Lease written by an older replica, or
// with another zone, is brought up to date by the next renewal. Every
// write also sets AnnotationLeavingAt once the replica leaves, and removes
// it before (one left behind by an earlier replica of the same name would
// drop this one from the ring). Other labels, and annotations, are kept as
// they are.
type leaseWriter struct {
	client          coordinationv1client.LeasesGetter
	namespace, name string
	ringName, zone  string
	// leavingAt is when the replica leaves the ring (see
	// Heartbeat.Leave); zero until it is asked to.
	leavingAt time.Time
	// lease is the Lease as last read or written; nil before the first
	// read or write succeeds.
	lease *coordinationv1.Lease
}

// get reads the Lease; later updates start from it. The error of a
// missing Lease satisfies apierrors.IsNotFound.
func (w *leaseWriter) get(ctx context.Context) error {
	l, err := w.client.Leases(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting lease %s/%s: %w", w.namespace, w.name, err)
	}
	w.lease = l
	return nil
}

// create creates the Lease with spec.
func (w *leaseWriter) create(ctx context.Context, spec coordinationv1.LeaseSpec) error {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: w.name},
		Spec:       spec,
	}
	w.mark(l)
	created, err := w.client.Leases(w.namespace).Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating lease %s/%s: %w", w.namespace, w.name, err)
	}
	w.lease = created
	return nil
}

// update writes spec into the Lease as last read or written.
func (w *leaseWriter) update(ctx context.Context, spec coordinationv1.LeaseSpec) error {
	if w.lease == nil {
		return errors.New("lease neither read nor written yet")
	}
	l := w.lease.DeepCopy()
	l.Spec = spec
	w.mark(l)
	updated, err := w.client.Leases(w.namespace).Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating lease %s/%s: %w", w.namespace, w.name, err)
	}
	w.lease = updated
	return nil
}

// mark sets the ring's and the zone's labels of l, removing the zone's
// when the zone is unknown, and AnnotationLeavingAt when the replica
// leaves, removing it otherwise.
func (w *leaseWriter) mark(l *coordinationv1.Lease) {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[LabelRing] = w.ringName
	if w.zone == "" {
		delete(l.Labels, LabelZone)
	} else {
		l.Labels[LabelZone] = w.zone
	}
	switch {
	case !w.leavingAt.IsZero():
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationLeavingAt] = w.leavingAt.UTC().Format(time.RFC3339Nano)
	case l.Annotations != nil:
		delete(l.Annotations, AnnotationLeavingAt)
	}
}
