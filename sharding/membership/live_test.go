package membership_test

import (
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
