package scheduler_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// servedBy is a successful Result whose server presented the certificate
// named cert.
func servedBy(cert string) probing.Result {
	sum := sha256.Sum256([]byte(cert))
	return probing.Result{
		Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200,
		Certificate: &probing.Certificate{FingerprintSHA256: hex.EncodeToString(sum[:])},
	}
}

// TestCertificateRotationIsNotified: a certificate rotated between two
// probes with the same outcome is notified once, with the change on the
// outcome and the ones after it.
func TestCertificateRotationIsNotified(t *testing.T) {
	h := newStreakHarness(t, scheduler.Thresholds{})
	first := h.probeWith(t, servedBy("x"), true)
	assert.Nil(t, first.Change)
	rotated := h.probeWith(t, servedBy("y"), true)
	require.NotNil(t, rotated.Change, "no change after a rotation")
	assert.Equal(t, scheduler.TargetCertificate, rotated.Change.What)
	assert.Equal(t, rotated.Time, rotated.Change.At)
	assert.True(t, first.Result.SameOutcome(rotated.Result), "the rotation changed the outcome")
	after := h.probeWith(t, servedBy("y"), false)
	assert.Same(t, rotated.Change, after.Change, "the change is kept on later outcomes")
}

// TestTargetChangesForgotten: what the probes saw of the target is
// forgotten with the outcome: after Disown, TakeOver and an Upsert of a
// changed check, the next certificate is a first observation, not a
// change.
func TestTargetChangesForgotten(t *testing.T) {
	forget := map[string]func(h *streakHarness, held scheduler.Outcome){
		"Disown":   func(h *streakHarness, _ scheduler.Outcome) { h.s.Disown(h.c.Key) },
		"TakeOver": func(h *streakHarness, held scheduler.Outcome) { h.s.TakeOver(h.c.Key, held.Time) },
		"Upsert": func(h *streakHarness, _ scheduler.Outcome) {
			h.c.Generation++
			h.s.Upsert(h.c)
		},
	}
	for name, f := range forget {
		t.Run(name, func(t *testing.T) {
			h := newStreakHarness(t, scheduler.Thresholds{})
			held := h.probeWith(t, servedBy("x"), true)
			h.prober.setResult(h.c.Target.URL(), servedBy("y"))
			f(h, held)
			if name == "Upsert" {
				// A changed check is probed at once after its jitter
				// (none here), off the grid.
				h.count++
				h.waitCalls(h.count)
				o := h.waitLatest(h.c.Key, func(o scheduler.Outcome) bool { return o.Generation == h.c.Generation }, "outcome after the Upsert")
				assert.Nil(t, o.Change)
				return
			}
			o := h.probeWith(t, servedBy("y"), true)
			assert.Nil(t, o.Change, "a change across %s", name)
		})
	}
}

// TestTargetChangeNumbers: every change of a scheduler has a number of
// its own, increasing.
func TestTargetChangeNumbers(t *testing.T) {
	h := newStreakHarness(t, scheduler.Thresholds{})
	h.probeWith(t, servedBy("x"), true)
	one := h.probeWith(t, servedBy("y"), true)
	two := h.probeWith(t, servedBy("z"), true)
	require.NotNil(t, one.Change)
	require.NotNil(t, two.Change)
	assert.Greater(t, two.Change.Seq, one.Change.Seq)
	assert.Equal(t, t0.Add(20*time.Second), two.Change.At)
}
