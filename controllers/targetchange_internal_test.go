package controllers

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/probing/scheduler"
)

func addrList(s ...string) []netip.Addr {
	var a []netip.Addr
	for _, x := range s {
		a = append(a, netip.MustParseAddr(x))
	}
	return a
}

func certChange(seq uint64, from, to string) *scheduler.TargetChange {
	return &scheduler.TargetChange{Seq: seq, What: scheduler.TargetCertificate, OldCertificate: sha256.Sum256([]byte(from)), NewCertificate: sha256.Sum256([]byte(to))}
}

func addressChange(seq uint64, from, to []netip.Addr) *scheduler.TargetChange {
	return &scheduler.TargetChange{Seq: seq, What: scheduler.TargetAddresses, OldAddresses: from, NewAddresses: to}
}

// TestTargetChangeNote: the note says what changed in words of ours:
// addresses as we format them (a bounded number), a certificate by the
// start of its fingerprints, a redirect location by the fact alone.
func TestTargetChangeNote(t *testing.T) {
	t.Parallel()
	var many []netip.Addr
	for i := 1; i <= 12; i++ {
		many = append(many, netip.MustParseAddr(fmt.Sprintf("127.0.0.%d", i)))
	}
	cert := certChange(1, "old", "new")
	cases := map[string]struct {
		change *scheduler.TargetChange
		want   string
	}{
		"addresses": {
			change: addressChange(1, addrList("127.0.0.1", "127.0.0.2"), addrList("127.0.0.1")),
			want:   "The target changed: addresses 127.0.0.1, 127.0.0.2 → 127.0.0.1",
		},
		"many addresses": {
			change: addressChange(1, many, addrList("::1")),
			want:   "The target changed: addresses 127.0.0.1, 127.0.0.2, 127.0.0.3, 127.0.0.4, 127.0.0.5, 127.0.0.6, 127.0.0.7, 127.0.0.8, and 4 more → ::1",
		},
		"certificate": {
			change: cert,
			want:   fmt.Sprintf("The target changed: certificate SHA-256 %x… → %x…", cert.OldCertificate[:8], cert.NewCertificate[:8]),
		},
		"redirect": {
			change: &scheduler.TargetChange{What: scheduler.TargetRedirect},
			want:   "The target changed: the final redirect location changed",
		},
		"all": {
			change: &scheduler.TargetChange{
				What:         scheduler.TargetAddresses | scheduler.TargetCertificate | scheduler.TargetRedirect,
				OldAddresses: addrList("127.0.0.1"), NewAddresses: addrList("127.0.0.2"),
				OldCertificate: cert.OldCertificate, NewCertificate: cert.NewCertificate,
			},
			want: fmt.Sprintf("The target changed: addresses 127.0.0.1 → 127.0.0.2; certificate SHA-256 %x… → %x…; the final redirect location changed", cert.OldCertificate[:8], cert.NewCertificate[:8]),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, targetChangeNote(tc.change))
		})
	}
}

// TestLedgerTargetChange: each change is recorded once, by its number,
// however often the checker is reconciled; at most one Event per period,
// the changes in between folded into the next; a new generation starts
// over.
func TestLedgerTargetChange(t *testing.T) {
	t.Parallel()
	key := types.NamespacedName{Namespace: "ns", Name: "checker"}
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const period = 5 * time.Minute
	a, b, c := addrList("127.0.0.1"), addrList("127.0.0.2"), addrList("127.0.0.3")
	type step struct {
		after      time.Duration
		generation int64 // 0 means 1
		change     *scheduler.TargetChange
		// want is the note recorded (nil: none), wait the delay returned.
		want *scheduler.TargetChange
		wait time.Duration
	}
	cases := map[string][]step{
		"no change": {
			{change: nil},
		},
		"once per change": {
			{change: certChange(1, "x", "y"), want: certChange(1, "x", "y")},
			{after: time.Minute, change: certChange(1, "x", "y")},
			{after: 10 * time.Minute, change: certChange(1, "x", "y")},
		},
		"rate limited and folded": {
			{change: certChange(1, "x", "y"), want: certChange(1, "x", "y")},
			{after: time.Minute, change: addressChange(2, a, b), wait: 4 * time.Minute},
			{after: 2 * time.Minute, change: addressChange(3, b, c), wait: 3 * time.Minute},
			{after: 3 * time.Minute, change: certChange(4, "y", "z"), wait: 2 * time.Minute},
			{after: 5 * time.Minute, change: certChange(4, "y", "z"), want: &scheduler.TargetChange{
				Seq: 4, What: scheduler.TargetAddresses | scheduler.TargetCertificate,
				OldAddresses: a, NewAddresses: c, OldCertificate: certChange(0, "y", "").OldCertificate, NewCertificate: certChange(0, "", "z").NewCertificate,
			}},
		},
		"held changes go without a new one": {
			{change: certChange(1, "x", "y"), want: certChange(1, "x", "y")},
			{after: time.Minute, change: certChange(2, "y", "z"), wait: 4 * time.Minute},
			{after: 6 * time.Minute, change: nil, want: &scheduler.TargetChange{Seq: 2, What: scheduler.TargetCertificate, OldCertificate: certChange(0, "y", "").OldCertificate, NewCertificate: certChange(0, "", "z").NewCertificate}},
		},
		"back where it was": {
			{change: certChange(1, "x", "y"), want: certChange(1, "x", "y")},
			{after: time.Minute, change: addressChange(2, a, b), wait: 4 * time.Minute},
			{after: 2 * time.Minute, change: addressChange(3, b, a)},
			{after: 6 * time.Minute, change: addressChange(3, b, a)},
		},
		"a new generation starts over": {
			{change: certChange(1, "x", "y"), want: certChange(1, "x", "y")},
			{after: time.Minute, generation: 2, change: certChange(2, "y", "z"), want: certChange(2, "y", "z")},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := newLedger()
			for i, s := range steps {
				gen := max(s.generation, 1)
				due, wait := l.targetChange(key, gen, s.change, at.Add(s.after), period)
				assert.Equal(t, s.wait, wait, "step %d: wait", i)
				if s.want == nil {
					assert.Nil(t, due, "step %d", i)
					continue
				}
				require.NotNil(t, due, "step %d", i)
				assert.Equal(t, targetChangeNote(s.want), targetChangeNote(due), "step %d", i)
				assert.Equal(t, s.want.Seq, due.Seq, "step %d", i)
			}
		})
	}
	t.Run("no record without a change", func(t *testing.T) {
		t.Parallel()
		l := newLedger()
		_, _ = l.targetChange(key, 1, nil, at, period)
		assert.Empty(t, l.records)
	})
}
