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

// renewed returns l as its holder renews it at renew (its own clock).
func renewed(l coordinationv1.Lease, renew time.Time) coordinationv1.Lease {
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renew))
	return l
}

func names(leases []coordinationv1.Lease) []string {
	var out []string
	for _, l := range leases {
		out = append(out, l.Name)
	}
	return out
}

// observedAt returns the observation instant of every Lease in obs.
func observedAt(obs membership.Observations) map[string]time.Time {
	out := map[string]time.Time{}
	for name, o := range obs {
		out[name] = o.At
	}
	return out
}

func TestObserve(t *testing.T) {
	a, b := lease("a", t0, 10), lease("b", t0.Add(time.Hour), 10)
	seen := membership.Observe(nil, []coordinationv1.Lease{a, b}, t0)
	recreated := lease("a", t0, 10)
	recreated.UID = "another"
	otherHolder := lease("a", t0, 10)
	otherHolder.Spec.HolderIdentity = ptr.To("b")
	longer := lease("a", t0, 20)
	relabelled := lease("a", t0, 10)
	relabelled.Labels = map[string]string{"x": "y"}
	relabelled.ResourceVersion = "42"
	now := t0.Add(5 * time.Second)

	tests := map[string]struct {
		prev   membership.Observations
		leases []coordinationv1.Lease
		want   map[string]time.Time
	}{
		"first seen counts as observed now, whatever its renewTime": {
			prev: nil, leases: []coordinationv1.Lease{a, b},
			want: map[string]time.Time{"a": now, "b": now},
		},
		"unchanged keeps its instant": {
			prev: seen, leases: []coordinationv1.Lease{a, b},
			want: map[string]time.Time{"a": t0, "b": t0},
		},
		"a renewal is observed now, even one that moves renewTime back": {
			prev: seen, leases: []coordinationv1.Lease{renewed(a, t0.Add(-time.Minute)), b},
			want: map[string]time.Time{"a": now, "b": t0},
		},
		"a Lease gone is forgotten": {
			prev: seen, leases: []coordinationv1.Lease{b},
			want: map[string]time.Time{"b": t0},
		},
		"recreated (new UID) is a change": {
			prev: seen, leases: []coordinationv1.Lease{recreated},
			want: map[string]time.Time{"a": now},
		},
		"another holder is a change": {
			prev: seen, leases: []coordinationv1.Lease{otherHolder},
			want: map[string]time.Time{"a": now},
		},
		"another duration is a change": {
			prev: seen, leases: []coordinationv1.Lease{longer},
			want: map[string]time.Time{"a": now},
		},
		"a write outside the record (labels) is no renewal": {
			prev: seen, leases: []coordinationv1.Lease{relabelled},
			want: map[string]time.Time{"a": t0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := observedAt(tc.prev)
			got := membership.Observe(tc.prev, tc.leases, now)
			assert.Equal(t, tc.want, observedAt(got))
			assert.Equal(t, before, observedAt(tc.prev), "prev modified")
		})
	}
}

func TestObservationsLive(t *testing.T) {
	const d = 10 * time.Second
	ahead := lease("ahead", t0.Add(time.Minute), 10) // writer's clock a minute ahead
	behind := lease("behind", t0.Add(-30*time.Second), 10)
	seen := membership.Observe(nil, []coordinationv1.Lease{ahead, behind}, t0)
	deleting := lease("deleting", t0, 10)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	released := lease("released", t0, 10)
	released.Spec.HolderIdentity = nil

	tests := map[string]struct {
		obs        membership.Observations
		leases     []coordinationv1.Lease
		now        time.Time
		want       []string
		nextExpiry time.Time
	}{
		"renewTime in the past: live for a lease duration after it was observed": {
			obs: seen, leases: []coordinationv1.Lease{behind}, now: t0.Add(d - time.Nanosecond),
			want: []string{"behind"}, nextExpiry: t0.Add(d),
		},
		"renewTime in the future: expired a lease duration after it was observed": {
			obs: seen, leases: []coordinationv1.Lease{ahead}, now: t0.Add(d),
		},
		"a renewal observed later moves the expiry, however far back its renewTime": {
			obs:    membership.Observe(seen, []coordinationv1.Lease{renewed(behind, t0.Add(-25*time.Second))}, t0.Add(5*time.Second)),
			leases: []coordinationv1.Lease{renewed(behind, t0.Add(-25*time.Second))}, now: t0.Add(14 * time.Second),
			want: []string{"behind"}, nextExpiry: t0.Add(15 * time.Second),
		},
		"a Lease not yet observed counts as observed now": {
			obs: nil, leases: []coordinationv1.Lease{lease("new", t0.Add(-time.Hour), 10)}, now: t0,
			want: []string{"new"}, nextExpiry: t0.Add(d),
		},
		"a Lease changed since its observation counts as observed now": {
			obs: seen, leases: []coordinationv1.Lease{renewed(ahead, t0.Add(2*time.Minute))}, now: t0.Add(time.Minute),
			want: []string{"ahead"}, nextExpiry: t0.Add(time.Minute + d),
		},
		"sorted, earliest expiry first": {
			obs:    membership.Observe(seen, []coordinationv1.Lease{ahead, lease("c", t0, 20)}, t0.Add(time.Second)),
			leases: []coordinationv1.Lease{lease("c", t0, 20), ahead}, now: t0.Add(2 * time.Second),
			want: []string{"ahead", "c"}, nextExpiry: t0.Add(d),
		},
		"released and deleting leases are not members": {
			obs: nil, leases: []coordinationv1.Lease{deleting, released}, now: t0,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, next := tc.obs.Live(tc.leases, tc.now)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.nextExpiry, next)
		})
	}
}

func TestObservationsStale(t *testing.T) {
	const after = time.Minute
	member := lease("member", t0.Add(-time.Hour), 10) // renewTime long past on the reader's clock
	released := lease("released", t0.Add(-time.Hour), 10)
	released.Spec.HolderIdentity = nil
	deleting := lease("deleting", t0.Add(-time.Hour), 10)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	all := []coordinationv1.Lease{member, released, deleting}
	seen := membership.Observe(nil, all, t0)

	tests := map[string]struct {
		obs    membership.Observations
		leases []coordinationv1.Lease
		now    time.Time
		want   []string
	}{
		"nothing is stale when first seen, however old its renewTime": {
			obs: nil, leases: all, now: t0,
		},
		"a member's Lease: not yet StaleAfter past its observed expiry": {
			obs: seen, leases: all, now: t0.Add(10*time.Second + after),
			want: []string{"released"},
		},
		"a member's Lease: StaleAfter past its observed expiry": {
			obs: seen, leases: all, now: t0.Add(10*time.Second + after + time.Nanosecond),
			want: []string{"member", "released"},
		},
		"a released Lease: unchanged for StaleAfter": {
			obs: seen, leases: all, now: t0.Add(after),
		},
		"a renewal observed late keeps it": {
			obs:    membership.Observe(seen, []coordinationv1.Lease{renewed(member, t0.Add(-time.Hour+time.Second))}, t0.Add(time.Minute)),
			leases: []coordinationv1.Lease{renewed(member, t0.Add(-time.Hour+time.Second))}, now: t0.Add(2 * time.Minute),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, names(tc.obs.Stale(tc.leases, tc.now, after)))
		})
	}
}
