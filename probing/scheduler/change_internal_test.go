package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
)

// seenProbe is one probe of a table: its verdict, what it saw of the
// target ("" or nil for a part it did not see), and when it finished,
// after the table's start.
type seenProbe struct {
	fail  bool
	addrs []string
	cert  string // a name, hashed into a fingerprint
	url   string
	after time.Duration
}

// result is the Result of p.
func (p seenProbe) result() probing.Result {
	r := probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, FinalURL: p.url}
	if p.fail {
		r = probing.Result{Reason: probing.ReasonUnexpectedStatus, Message: "status 503", StatusCode: 503, FinalURL: p.url}
	}
	for _, a := range p.addrs {
		r.ResolvedAddresses = append(r.ResolvedAddresses, netip.MustParseAddr(a))
	}
	if p.cert != "" {
		sum := certSum(p.cert)
		r.Certificate = &probing.Certificate{FingerprintSHA256: hex.EncodeToString(sum[:]), Issuer: "issuer of " + p.cert}
	}
	return r
}

func certSum(name string) [sha256.Size]byte { return sha256.Sum256([]byte(name)) }

var changeT0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// runSeen stores the outcomes of probes in a new entry, as the worker
// does, and returns them with whether each was notified.
func runSeen(t *testing.T, probes []seenProbe) ([]Outcome, []bool) {
	t.Helper()
	e := &entry{check: Check{Interval: time.Minute}}
	var seq uint64
	var outs []Outcome
	var notified []bool
	for _, p := range probes {
		o := Outcome{Generation: 1, Result: p.result(), Time: changeT0.Add(p.after)}
		e.watchTarget(&o, e.outcome, &seq)
		notified = append(notified, e.setOutcome(&o))
		assert.Empty(t, o.Result.FinalURL, "the final URL is kept as a hash only")
		stored, _ := e.latest()
		require.Equal(t, o, stored)
		outs = append(outs, o)
	}
	return outs, notified
}

// TestTargetChangeDetection: a part of the target's identity changes when
// a probe saw it differ from the latest probe that saw it; the first
// observation is none, and a probe that did not see a part (no lookup, no
// handshake, no response) neither changes it nor forgets it. The change
// is notified although the outcome stays the same, once, and stays on the
// outcomes after it.
func TestTargetChangeDetection(t *testing.T) {
	t.Parallel()
	a1, a2 := []string{"127.0.0.1"}, []string{"127.0.0.1", "127.0.0.2"}
	type want struct {
		what     TargetParts
		old, new []string // addresses, when what has them
		oldCert  string
		newCert  string
	}
	cases := map[string]struct {
		probes []seenProbe
		// changes is the change each outcome carries (the zero want for
		// none), notify whether each was notified.
		changes []want
		notify  []bool
	}{
		"first observation": {
			probes:  []seenProbe{{addrs: a1, cert: "x", url: "u"}},
			changes: []want{{}},
			notify:  []bool{true},
		},
		"unchanged": {
			probes:  []seenProbe{{addrs: a1, cert: "x", url: "u"}, {addrs: a1, cert: "x", url: "u"}},
			changes: []want{{}, {}},
			notify:  []bool{true, false},
		},
		"certificate": {
			probes:  []seenProbe{{cert: "x"}, {cert: "y"}, {cert: "y"}},
			changes: []want{{}, {what: TargetCertificate, oldCert: "x", newCert: "y"}, {what: TargetCertificate, oldCert: "x", newCert: "y"}},
			notify:  []bool{true, true, false},
		},
		"addresses": {
			probes:  []seenProbe{{addrs: a2}, {addrs: a1}},
			changes: []want{{}, {what: TargetAddresses, old: a2, new: a1}},
			notify:  []bool{true, true},
		},
		"redirect": {
			probes:  []seenProbe{{url: "u"}, {url: "v"}},
			changes: []want{{}, {what: TargetRedirect}},
			notify:  []bool{true, true},
		},
		"nil then set is not a change": {
			probes:  []seenProbe{{addrs: a1}, {}, {addrs: a1}},
			changes: []want{{}, {}, {}},
			notify:  []bool{true, false, false},
		},
		"compared with the latest observation": {
			probes:  []seenProbe{{addrs: a1}, {}, {addrs: a2}},
			changes: []want{{}, {}, {what: TargetAddresses, old: a1, new: a2}},
			notify:  []bool{true, false, true},
		},
		"first seen late": {
			probes:  []seenProbe{{}, {cert: "x"}, {cert: "x"}},
			changes: []want{{}, {}, {}},
			notify:  []bool{true, false, false},
		},
		"several parts at once": {
			probes:  []seenProbe{{addrs: a1, cert: "x", url: "u"}, {addrs: a2, cert: "y", url: "u"}},
			changes: []want{{}, {what: TargetAddresses | TargetCertificate, old: a1, new: a2, oldCert: "x", newCert: "y"}},
			notify:  []bool{true, true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i := range tc.probes {
				tc.probes[i].after = time.Duration(i) * time.Minute
			}
			outs, notified := runSeen(t, tc.probes)
			assert.Equal(t, tc.notify, notified, "notified")
			for i, o := range outs {
				w := tc.changes[i]
				if w.what == 0 {
					assert.Nil(t, o.Change, "probe %d", i)
					continue
				}
				require.NotNil(t, o.Change, "probe %d", i)
				assert.Equal(t, w.what, o.Change.What, "probe %d", i)
				assert.EqualValues(t, 1, o.Change.Seq, "probe %d", i)
				assert.Equal(t, addrs(w.old), o.Change.OldAddresses, "probe %d", i)
				assert.Equal(t, addrs(w.new), o.Change.NewAddresses, "probe %d", i)
				if w.what.Has(TargetCertificate) {
					assert.Equal(t, certSum(w.oldCert), o.Change.OldCertificate, "probe %d", i)
					assert.Equal(t, certSum(w.newCert), o.Change.NewCertificate, "probe %d", i)
				}
				assert.Equal(t, probing.ReadyMessage, o.Result.Message, "a success says nothing of it")
			}
		})
	}
}

func addrs(s []string) []netip.Addr {
	var a []netip.Addr
	for _, x := range s {
		a = append(a, netip.MustParseAddr(x))
	}
	return a
}

// TestTargetChangeInFailureMessages: the failure streak that starts after
// a change within ChangeHorizon says so at the end of its message, from
// its first failure, the same words for every failure of the streak (so
// that a steady failure writes nothing); the success that ends such a
// streak consumes the change, successes before it do not.
func TestTargetChangeInFailureMessages(t *testing.T) {
	t.Parallel()
	const fail = "status 503"
	ok := func(cert string, after time.Duration) seenProbe { return seenProbe{cert: cert, after: after} }
	failed := func(cert string, after time.Duration) seenProbe {
		return seenProbe{fail: true, cert: cert, after: after}
	}
	cases := map[string]struct {
		probes []seenProbe
		want   []string // the message of each failure, in order
	}{
		"fixed for the streak": {
			probes: []seenProbe{ok("x", 0), ok("y", time.Minute), failed("y", 5*time.Minute), failed("y", 6*time.Minute), failed("y", 30*time.Minute)},
			want:   []string{fail + " (certificate changed 4m before)", fail + " (certificate changed 4m before)", fail + " (certificate changed 4m before)"},
		},
		"the success after the streak consumes it": {
			probes: []seenProbe{ok("x", 0), ok("y", time.Minute), failed("y", 2*time.Minute), ok("y", 3*time.Minute), failed("y", 4*time.Minute)},
			want:   []string{fail + " (certificate changed 1m before)", fail},
		},
		"seen by the failing probe": {
			probes: []seenProbe{ok("x", 0), failed("y", 30*time.Second), failed("y", time.Minute)},
			want:   []string{fail + " (certificate changed since the previous probe)", fail + " (certificate changed since the previous probe)"},
		},
		"during a streak": {
			probes: []seenProbe{failed("x", 0), failed("x", time.Minute), failed("y", 2*time.Minute), failed("y", 3*time.Minute)},
			want:   []string{fail, fail, fail + " (certificate changed since the previous probe)", fail + " (certificate changed since the previous probe)"},
		},
		"seconds": {
			probes: []seenProbe{ok("x", 0), ok("y", 10*time.Second), failed("y", 55*time.Second)},
			want:   []string{fail + " (certificate changed 45s before)"},
		},
		"at the horizon": {
			probes: []seenProbe{ok("x", 0), ok("y", time.Minute), failed("y", time.Minute+ChangeHorizon)},
			want:   []string{fail + " (certificate changed 1h before)"},
		},
		"beyond the horizon": {
			probes: []seenProbe{ok("x", 0), ok("y", time.Minute), failed("y", 2*time.Minute+ChangeHorizon), failed("y", 3*time.Minute+ChangeHorizon)},
			want:   []string{fail, fail},
		},
		"no change": {
			probes: []seenProbe{ok("x", 0), failed("x", time.Minute)},
			want:   []string{fail},
		},
		"addresses": {
			probes: []seenProbe{{addrs: []string{"127.0.0.1"}}, {addrs: []string{"127.0.0.2"}, after: time.Minute}, {fail: true, after: 3 * time.Minute}},
			want:   []string{fail + " (addresses changed 2m before)"},
		},
		"all parts": {
			probes: []seenProbe{{addrs: []string{"127.0.0.1"}, cert: "x", url: "u"}, {addrs: []string{"127.0.0.2"}, cert: "y", url: "v", after: time.Minute}, {fail: true, after: 2 * time.Hour / 3}},
			want:   []string{fail + " (addresses, certificate and redirect location changed 39m before)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			outs, _ := runSeen(t, tc.probes)
			var got []string
			for _, o := range outs {
				if !o.Result.Success {
					got = append(got, o.Result.Message)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestTargetStateIsSmall: what a check keeps of its target is a few
// fixed-size values and a shared slice.
func TestTargetStateIsSmall(t *testing.T) {
	t.Parallel()
	var st targetState
	assert.LessOrEqual(t, unsafe.Sizeof(st), uintptr(128))
}
