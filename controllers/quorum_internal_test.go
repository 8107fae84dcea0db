package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

func entry(shard, status, reason string, generation int64) webcheckerv1alpha1.VantagePointStatus {
	return webcheckerv1alpha1.VantagePointStatus{Shard: shard, Ready: metav1.ConditionStatus(status), Reason: reason, Message: reason + " at " + shard, ObservedGeneration: generation}
}

func TestQuorumReady(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	abc := []VantagePoint{{Shard: "a", Zone: "zone-a"}, {Shard: "b", Zone: "zone-b"}, {Shard: "c", Zone: "zone-c"}}
	storedTrue := &metav1.Condition{Type: webcheckerv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded", Message: "old"}
	tests := map[string]struct {
		entries   []webcheckerv1alpha1.VantagePointStatus
		set       []VantagePoint
		requested int
		stored    *metav1.Condition
		// want is the status and reason, or "" for no condition; message
		// the start of its message.
		want, reason, message, summary string
	}{
		"two of three succeed": {
			entries: []webcheckerv1alpha1.VantagePointStatus{entry("a", "True", "ProbeSucceeded", 2), entry("b", "True", "ProbeSucceeded", 2), entry("c", "False", "EgressDenied", 2)},
			set:     abc, requested: 3,
			want: "True", reason: "ProbeSucceeded", message: "2 of 3 vantage points succeed (zone-a, zone-b)", summary: "2/3",
		},
		"two of three fail, the most common reason": {
			entries: []webcheckerv1alpha1.VantagePointStatus{entry("a", "False", "Timeout", 2), entry("b", "False", "ConnectionFailed", 2), entry("c", "False", "ConnectionFailed", 2)},
			set:     abc, requested: 3,
			want: "False", reason: "ConnectionFailed", message: "3 of 3 vantage points fail (zone-a: Timeout, zone-b: ConnectionFailed, zone-c: ConnectionFailed): Timeout at a", summary: "0/3",
		},
		"a tie of reasons goes to the first vantage point's": {
			entries: []webcheckerv1alpha1.VantagePointStatus{entry("b", "False", "Timeout", 2), entry("c", "False", "DNSFailed", 2)},
			set:     abc, requested: 3,
			want: "False", reason: "Timeout", message: "2 of 3 vantage points fail", summary: "0/3",
		},
		"no majority keeps the stored condition": {
			entries: []webcheckerv1alpha1.VantagePointStatus{entry("a", "True", "ProbeSucceeded", 2), entry("b", "False", "Timeout", 2)},
			set:     abc, requested: 3, stored: storedTrue,
			want: "True", reason: "ProbeSucceeded", message: "No majority of 3 vantage points: 1 succeed, 1 fail, 1 have not reported; True is kept", summary: "1/3",
		},
		"no majority and nothing stored decides nothing": {
			entries: []webcheckerv1alpha1.VantagePointStatus{entry("a", "True", "ProbeSucceeded", 2)},
			set:     abc, requested: 3,
			summary: "1/3",
		},
		"entries of another generation or replica do not count": {
			entries: []webcheckerv1alpha1.VantagePointStatus{entry("a", "False", "Timeout", 1), entry("b", "False", "Timeout", 2), entry("x", "False", "Timeout", 2), entry("c", "True", "ProbeSucceeded", 2)},
			set:     abc, requested: 3, stored: storedTrue,
			want: "True", reason: "ProbeSucceeded", message: "No majority", summary: "1/3",
		},
		"two of two are needed": {
			entries: []webcheckerv1alpha1.VantagePointStatus{entry("a", "True", "ProbeSucceeded", 2), entry("b", "False", "Timeout", 2)},
			set:     abc[:2], requested: 2, stored: storedTrue,
			want: "True", message: "No majority of 2 vantage points", reason: "ProbeSucceeded", summary: "1/2",
		},
		"fewer replicas than requested": {
			entries: []webcheckerv1alpha1.VantagePointStatus{entry("a", "True", "ProbeSucceeded", 2), entry("b", "True", "ProbeSucceeded", 2)},
			set:     abc[:2], requested: 5,
			want: "True", reason: "ProbeSucceeded", message: "2 of 2 vantage points succeed (zone-a, zone-b) (5 vantage points requested, 2 replicas live: every replica probes the checker)", summary: "2/2",
		},
		"shards named where zones repeat": {
			entries:   []webcheckerv1alpha1.VantagePointStatus{entry("a", "True", "ProbeSucceeded", 2), entry("b", "True", "ProbeSucceeded", 2)},
			set:       []VantagePoint{{Shard: "a", Zone: "zone-a"}, {Shard: "b", Zone: "zone-a"}, {Shard: "c"}},
			requested: 3, want: "True", reason: "ProbeSucceeded", message: "2 of 3 vantage points succeed (a, b)", summary: "2/3",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := countQuorum(tc.entries, tc.set, tc.requested, 2)
			assert.Equal(t, tc.summary, q.summary())
			got := q.ready(tc.stored, 2, now)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, metav1.ConditionStatus(tc.want), got.Status)
			assert.Equal(t, tc.reason, got.Reason)
			assert.True(t, strings.HasPrefix(got.Message, tc.message), "message %q", got.Message)
			assert.Equal(t, int64(2), got.ObservedGeneration)
		})
	}
}

func TestQuorumAvailable(t *testing.T) {
	t.Parallel()
	now := time.Now()
	set := []VantagePoint{{Shard: "a"}, {Shard: "b"}}
	full := countQuorum(nil, set, 2, 1).available(1, now)
	assert.Equal(t, metav1.ConditionTrue, full.Status)
	assert.Equal(t, ReasonVantagePointsAvailable, full.Reason)
	short := countQuorum(nil, set, 3, 1).available(1, now)
	assert.Equal(t, metav1.ConditionFalse, short.Status)
	assert.Equal(t, ReasonTooFewReplicas, short.Reason)
	assert.Equal(t, "3 vantage points requested, but only 2 replicas are live: every replica probes the checker", short.Message)
}

func TestVantageFieldManager(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "webchecker-vantage-webchecker-7d9f-abcde", VantageFieldManager("webchecker-7d9f-abcde"))
	long := strings.Repeat("x", 253)
	m := VantageFieldManager(long)
	assert.Len(t, m, maxFieldManager)
	assert.NotEqual(t, m, VantageFieldManager(long[:252]+"y"), "ids that share a prefix keep distinct managers")
}

func TestEntriesOfDropsReplicasThatLeft(t *testing.T) {
	t.Parallel()
	entries := []webcheckerv1alpha1.VantagePointStatus{entry("a", "True", "", 1), entry("c", "True", "", 1), entry("b", "True", "", 1)}
	kept := entriesOf(entries, []VantagePoint{{Shard: "b"}, {Shard: "a"}, {Shard: "d"}})
	assert.Equal(t, []webcheckerv1alpha1.VantagePointStatus{entries[0], entries[2]}, kept)
}
