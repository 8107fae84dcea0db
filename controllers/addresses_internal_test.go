package controllers

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
)

// TestAddressesInStatus: the owner writes each address's result to
// status.addresses (a success without its message), a probe that succeeds
// with failing addresses keeps its message in the Ready condition, and a
// probe of the name as a client connects clears the list.
func TestAddressesInStatus(t *testing.T) {
	const mixed = probing.ReadyMessage + ": 1 of 2 addresses failing (127.0.0.3: refused)"
	result := probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: mixed, StatusCode: 200, Addresses: []probing.AddressResult{
		{Address: netip.MustParseAddr("127.0.0.1"), Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200},
		{Address: netip.MustParseAddr("127.0.0.3"), Reason: probing.ReasonConnectionFailed, Message: "refused"},
	}}
	u := desiredStatus(viewed("me").with(result, 1))
	assert.Equal(t, []webcheckerv1alpha1.AddressStatus{
		{Address: "127.0.0.1", Ready: metav1.ConditionTrue, Reason: string(probing.ReasonSucceeded)},
		{Address: "127.0.0.3", Ready: metav1.ConditionFalse, Reason: string(probing.ReasonConnectionFailed), Message: "refused"},
	}, u.status.Addresses)
	ready := meta.FindStatusCondition(u.status.Conditions, webcheckerv1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, mixed, ready.Message)

	stored := viewed("me")
	stored.wc.Status = u.status
	cleared := desiredStatus(stored.with(probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}, 2))
	assert.Nil(t, cleared.status.Addresses)
	ready = meta.FindStatusCondition(cleared.status.Conditions, webcheckerv1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, probing.ReadyMessage, ready.Message)
}

// TestAddressDetailOnly: a new message of an address whose verdict and
// reason stay is a detail (written at most every MessagePeriod); another
// verdict, reason or address is not.
func TestAddressDetailOnly(t *testing.T) {
	base := webcheckerv1alpha1.WebCheckerStatus{
		Conditions: []metav1.Condition{readyOf(metav1.ConditionTrue, string(probing.ReasonSucceeded))},
		Addresses: []webcheckerv1alpha1.AddressStatus{
			{Address: "127.0.0.1", Ready: metav1.ConditionTrue, Reason: string(probing.ReasonSucceeded)},
			{Address: "127.0.0.3", Ready: metav1.ConditionFalse, Reason: string(probing.ReasonTimeout), Message: "timeout after 1s"},
		},
	}
	cases := map[string]struct {
		change func(s *webcheckerv1alpha1.WebCheckerStatus)
		detail bool
	}{
		"message": {func(s *webcheckerv1alpha1.WebCheckerStatus) { s.Addresses[1].Message = "timeout after 2s" }, true},
		"reason": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.Addresses[1].Reason = string(probing.ReasonConnectionFailed)
		}, false},
		"verdict":      {func(s *webcheckerv1alpha1.WebCheckerStatus) { s.Addresses[0].Ready = metav1.ConditionFalse }, false},
		"address gone": {func(s *webcheckerv1alpha1.WebCheckerStatus) { s.Addresses = s.Addresses[:1] }, false},
		"new address": {func(s *webcheckerv1alpha1.WebCheckerStatus) {
			s.Addresses = append(s.Addresses, webcheckerv1alpha1.AddressStatus{Address: "127.0.0.4", Ready: metav1.ConditionTrue, Reason: string(probing.ReasonSucceeded)})
		}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			desired := base.DeepCopy()
			tc.change(desired)
			assert.Equal(t, tc.detail, detailOnly(base.DeepCopy(), desired))
		})
	}
}
