package membership_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/networkio/webchecker/sharding/membership"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func lease(holder string, renew time.Time, seconds int32) coordinationv1.Lease {
	l := coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: holder},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			LeaseDurationSeconds: ptr.To(seconds),
			RenewTime:            ptr.To(metav1.NewMicroTime(renew)),
		},
	}
	return l
}

func TestLive(t *testing.T) {
	deleting := lease("deleting", t0, 10)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	noHolder := lease("", t0, 10)
	noRenew := lease("no-renew", t0, 10)
	noRenew.Spec.RenewTime = nil
	zeroDuration := lease("zero", t0, 0)

	tests := map[string]struct {
		leases     []coordinationv1.Lease
		now        time.Time
		want       []string
		nextExpiry time.Time
	}{
		"no leases": {now: t0},
		"live just before expiry": {
			leases: []coordinationv1.Lease{lease("a", t0, 10)}, now: t0.Add(10*time.Second - time.Nanosecond),
			want: []string{"a"}, nextExpiry: t0.Add(10 * time.Second),
		},
		"expired exactly at renewTime + duration": {
			leases: []coordinationv1.Lease{lease("a", t0, 10)}, now: t0.Add(10 * time.Second),
		},
		"sorted, earliest expiry first": {
			leases: []coordinationv1.Lease{lease("c", t0, 10), lease("a", t0.Add(-3*time.Second), 10), lease("b", t0, 5)},
			now:    t0.Add(time.Second),
			want:   []string{"a", "b", "c"}, nextExpiry: t0.Add(5 * time.Second),
		},
		"expired ones do not count for the next expiry": {
			leases: []coordinationv1.Lease{lease("old", t0.Add(-time.Minute), 10), lease("a", t0, 10)},
			now:    t0,
			want:   []string{"a"}, nextExpiry: t0.Add(10 * time.Second),
		},
		"released, incomplete and deleting leases are not members": {
			leases: []coordinationv1.Lease{deleting, noHolder, noRenew, zeroDuration, lease("a", t0, 10)},
			now:    t0,
			want:   []string{"a"}, nextExpiry: t0.Add(10 * time.Second),
		},
		"a holder listed twice counts once": {
			leases: []coordinationv1.Lease{lease("a", t0, 10), lease("a", t0.Add(time.Second), 10)},
			now:    t0,
			want:   []string{"a"}, nextExpiry: t0.Add(10 * time.Second),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, next := membership.Live(tc.leases, tc.now)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.nextExpiry, next)
		})
	}
}

// zonedLease is a Lease named name, held by holder, in zone ("" leaves the
// label out).
func zonedLease(name, holder, zone string) coordinationv1.Lease {
	l := lease(holder, t0, 10)
	l.Name = name
	if zone != "" {
		l.Labels = map[string]string{membership.LabelZone: zone}
	}
	return l
}

func TestZones(t *testing.T) {
	deleting := zonedLease("deleting", "deleting", "z")
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	released := zonedLease("released", "", "z")
	tests := map[string]struct {
		leases []coordinationv1.Lease
		ids    []string
		want   map[string]string
	}{
		"no leases":             {ids: []string{"a"}},
		"no zone known":         {leases: []coordinationv1.Lease{zonedLease("a", "a", "")}, ids: []string{"a"}},
		"members of ids only":   {leases: []coordinationv1.Lease{zonedLease("a", "a", "x"), zonedLease("b", "b", "y")}, ids: []string{"a"}, want: map[string]string{"a": "x"}},
		"unknown zones omitted": {leases: []coordinationv1.Lease{zonedLease("a", "a", "x"), zonedLease("b", "b", "")}, ids: []string{"a", "b"}, want: map[string]string{"a": "x"}},
		"deleting and released leases ignored": {
			leases: []coordinationv1.Lease{deleting, released, zonedLease("a", "a", "x")}, ids: []string{"a", "deleting"}, want: map[string]string{"a": "x"},
		},
		"the lease named after its holder wins": {
			leases: []coordinationv1.Lease{zonedLease("a-old", "a", "old"), zonedLease("a", "a", "x"), zonedLease("0-first", "a", "first")},
			ids:    []string{"a"}, want: map[string]string{"a": "x"},
		},
		"else the first by name": {
			leases: []coordinationv1.Lease{zonedLease("b2", "a", "later"), zonedLease("b1", "a", "first")},
			ids:    []string{"a"}, want: map[string]string{"a": "first"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, membership.Zones(tc.leases, tc.ids))
			slices.Reverse(tc.leases)
			assert.Equal(t, tc.want, membership.Zones(tc.leases, tc.ids), "in reverse order")
		})
	}
}

// leavingLease is the Lease of holder, live, announcing it leaves at at.
func leavingLease(holder string, at time.Time) coordinationv1.Lease {
	l := lease(holder, t0, 10)
	l.Annotations = map[string]string{membership.AnnotationLeavingAt: at.Format(time.RFC3339Nano)}
	return l
}

func TestLeaving(t *testing.T) {
	now := t0.Add(5 * time.Second)
	deleting := leavingLease("deleting", now.Add(-time.Second))
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	garbled := lease("garbled", t0, 10)
	garbled.Annotations = map[string]string{membership.AnnotationLeavingAt: "soon"}

	tests := map[string]struct {
		leases  []coordinationv1.Lease
		ids     []string
		staying []string
		left    map[string]time.Time
		next    time.Time
	}{
		"nobody leaving": {
			leases: []coordinationv1.Lease{lease("a", t0, 10), lease("b", t0, 10)}, ids: []string{"a", "b"}, staying: []string{"a", "b"},
		},
		"left at the instant announced": {
			leases: []coordinationv1.Lease{lease("a", t0, 10), leavingLease("b", now)}, ids: []string{"a", "b"},
			staying: []string{"a"}, left: map[string]time.Time{"b": now},
		},
		"left before now, seen late: from the instant": {
			leases: []coordinationv1.Lease{leavingLease("a", now.Add(-3*time.Second)), lease("b", t0, 10)}, ids: []string{"a", "b"},
			staying: []string{"b"}, left: map[string]time.Time{"a": now.Add(-3 * time.Second)},
		},
		"leaving later: stays, looked at again then": {
			leases: []coordinationv1.Lease{leavingLease("a", now.Add(2*time.Second)), leavingLease("b", now.Add(time.Second))}, ids: []string{"a", "b"},
			staying: []string{"a", "b"}, next: now.Add(time.Second),
		},
		"self never taken out": {
			leases: []coordinationv1.Lease{leavingLease("self", now.Add(-time.Second)), lease("b", t0, 10)}, ids: []string{"b", "self"},
			staying: []string{"b", "self"},
		},
		"not live, deleting or garbled: ignored": {
			leases: []coordinationv1.Lease{leavingLease("expired", now.Add(-time.Second)), deleting, garbled, lease("a", t0, 10)},
			ids:    []string{"a", "garbled"}, staying: []string{"a", "garbled"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ids := slices.Clone(tc.ids)
			staying, left, next := membership.Leaving(tc.leases, ids, "self", now)
			assert.Equal(t, tc.staying, staying)
			assert.Equal(t, tc.left, left)
			assert.Equal(t, tc.next, next)
			assert.Equal(t, tc.ids, ids, "ids modified")
		})
	}
}
