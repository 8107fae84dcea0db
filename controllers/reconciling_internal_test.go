package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// reconcilingAt is a stored Reconciling condition (True, AwaitingResult)
// of generation, stamped t0.
func reconcilingAt(generation int64) metav1.Condition {
	return reconcilingCondition(generation, t0)
}

// at is c evaluated at generation.
func at(c metav1.Condition, generation int64) metav1.Condition {
	c.ObservedGeneration = generation
	return c
}

// TestDesiredReconciling: the Reconciling condition is True while the
// status written holds no result of the current generation (2), and gone
// in the write that records one; it never makes a write of its own.
func TestDesiredReconciling(t *testing.T) {
	set := []VantagePoint{{Shard: "me", Zone: "zone-a"}, {Shard: "b", Zone: "zone-b"}, {Shard: "c", Zone: "zone-c"}}
	quorumOf := func(v statusView, entries ...webcheckerv1alpha1.VantagePointStatus) statusView {
		v.p.vantage, v.p.vantagePoints = set, 3
		v.wc.Status.ObservedGeneration, v.wc.Status.Quorum = 2, "0/3"
		v.wc.Status.VantagePoints = entries
		v.wc.Status.Conditions = append(v.wc.Status.Conditions,
			metav1.Condition{Type: ConditionVantagePointsAvailable, Status: metav1.ConditionTrue, Reason: ReasonVantagePointsAvailable,
				Message: "3 replicas probe the checker, as requested", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(t0)})
		return v
	}
	pending := at(pendingCondition(2, t0), 2)
	pendingStored := viewed("me", pending, reconcilingAt(2))
	pendingStored.wc.Status.ObservedGeneration = 2
	specChanged := viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded"))
	specChanged.wc.Status.ObservedGeneration = 1
	suspended := viewed("me", pending, reconcilingAt(2))
	suspended.p = plan{owned: true, probes: true, suspended: true}
	trueAt2 := at(readyOf(metav1.ConditionTrue, "ProbeSucceeded"), 2)

	tests := map[string]struct {
		view statusView
		// reconciling is whether the status has Reconciling True.
		reconciling bool
		// unchanged: the status is the stored one (no write).
		unchanged bool
	}{
		"a first result at once: never Reconciling": {
			view: viewed("").with(answered, 1),
		},
		"no result after the grace: Pending and Reconciling": {
			view: viewed(""), reconciling: true,
		},
		"the first result removes it": {
			view: pendingStored.with(timedOut, 1),
		},
		"still Pending, no outcome: kept, no write": {
			view: pendingStored, reconciling: true, unchanged: true,
		},
		"spec changed, one vantage point: observedGeneration says it, no write": {
			view: specChanged, unchanged: true,
		},
		"suspended: decided, removed": {
			view: suspended,
		},
		"several vantage points, none of this generation: the kept result is not one": {
			view:        quorumOf(viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded")), entry("me", "True", "ProbeSucceeded", 1)),
			reconciling: true,
		},
		"several vantage points, a majority of this generation decides": {
			view: quorumOf(viewed("me", readyOf(metav1.ConditionTrue, "ProbeSucceeded"), reconcilingAt(2)),
				entry("me", "False", "Timeout", 2), entry("b", "False", "Timeout", 2)),
		},
		"several vantage points, no majority yet at this generation: still Reconciling": {
			view:        quorumOf(viewed("me", trueAt2, reconcilingAt(2)), entry("me", "True", "ProbeSucceeded", 2)),
			reconciling: true,
		},
		"several vantage points, decided at this generation, then no majority: not Reconciling": {
			view: quorumOf(viewed("me", trueAt2), entry("me", "True", "ProbeSucceeded", 2), entry("b", "False", "Timeout", 2)),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := desiredStatus(tc.view)
			c := meta.FindStatusCondition(u.status.Conditions, webcheckerv1alpha1.ConditionReconciling)
			if !tc.reconciling {
				assert.Nil(t, c, "Reconciling: %+v", c)
			} else {
				require.NotNil(t, c, "no Reconciling condition")
				assert.Equal(t, metav1.ConditionTrue, c.Status)
				assert.Equal(t, webcheckerv1alpha1.ReasonAwaitingResult, c.Reason)
				assert.EqualValues(t, 2, c.ObservedGeneration)
			}
			if tc.unchanged {
				assert.True(t, equality.Semantic.DeepEqual(tc.view.wc.Status, u.status), "a write:\n%+v\n%+v", tc.view.wc.Status, u.status)
			}
		})
	}
}
