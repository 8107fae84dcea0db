package membership_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/networkio/webchecker/sharding/membership"
)

// awaitLabels waits until the Lease of id has been renewed at renewed and
// checks its labels then.
func awaitLabels(t *testing.T, id string, renewed time.Time, want map[string]string) {
	t.Helper()
	renewedAt(t, id, renewed)
	l, err := getLease(t, id)
	require.NoError(t, err)
	assert.Equal(t, want, l.Labels, "labels of the lease renewed at %s", renewed)
}

// TestHeartbeatWritesItsZone checks that every creation and renewal of the
// Lease carries the zone's label, or none when the zone is unknown: a
// Lease an older replica wrote, or one with another zone, is brought up to
// date by the first renewal, and one whose label another writer changed
// by the next. Other labels are kept.
func TestHeartbeatWritesItsZone(t *testing.T) {
	tests := map[string]struct {
		zone string
		// existing, when set, are the labels of a Lease this replica's id
		// already holds before it starts (nil: no Lease).
		existing map[string]string
		want     map[string]string
	}{
		"new lease in a zone":          {zone: "eu-1", want: map[string]string{membership.LabelRing: ringName, membership.LabelZone: "eu-1"}},
		"new lease of an unknown zone": {want: map[string]string{membership.LabelRing: ringName}},
		"lease of an older replica": {zone: "eu-1", existing: map[string]string{membership.LabelRing: ringName, "team": "net"},
			want: map[string]string{membership.LabelRing: ringName, membership.LabelZone: "eu-1", "team": "net"}},
		"lease of another zone": {zone: "eu-1", existing: map[string]string{membership.LabelRing: ringName, membership.LabelZone: "us-2"},
			want: map[string]string{membership.LabelRing: ringName, membership.LabelZone: "eu-1"}},
		"zone no longer known": {existing: map[string]string{membership.LabelRing: ringName, membership.LabelZone: "us-2", "team": "net"},
			want: map[string]string{membership.LabelRing: ringName, "team": "net"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id := "zone-" + strings.ReplaceAll(name, " ", "-")
			direct := leasesClient(t, cp.Config).Leases(namespace)
			t.Cleanup(func() { _ = direct.Delete(context.Background(), id, metav1.DeleteOptions{}) })
			if tc.existing != nil {
				_, err := direct.Create(context.Background(), &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: id, Labels: tc.existing},
					Spec: coordinationv1.LeaseSpec{
						HolderIdentity:       ptr.To(id),
						LeaseDurationSeconds: ptr.To(int32(10)),
						RenewTime:            ptr.To(metav1.NewMicroTime(t0.Add(-time.Minute))),
					},
				}, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			clk := clocktesting.NewFakeClock(t0)
			hb, _ := startHeartbeat(t, leasesClient(t, cp.Config), id, clk, func(o *membership.HeartbeatOptions) { o.Zone = tc.zone })
			awaitLabels(t, id, t0, tc.want)
			awaitFencingChange(t, hb, false, 5*time.Second)

			// A renewal from the Lease as last written keeps them.
			clk.Step(membership.DefaultRenewInterval)
			awaitLabels(t, id, t0.Add(membership.DefaultRenewInterval), tc.want)

			// Another writer changes the zone's label: the renewal after
			// it (a conflict) reads the Lease again, the next one puts
			// the label right.
			require.NoError(t, changeLease(direct, id, func(l *coordinationv1.Lease) {
				if l.Labels == nil {
					l.Labels = map[string]string{}
				}
				l.Labels[membership.LabelZone] = "elsewhere"
			}))
			changed := clk.Now()
			require.Eventually(t, func() bool {
				clk.Step(membership.DefaultRenewInterval)
				l, err := getLease(t, id)
				return err == nil && l.Spec.RenewTime.Time.After(changed) && maps.Equal(tc.want, l.Labels)
			}, 10*time.Second, 250*time.Millisecond, "zone label not restored")
		})
	}
}
