package controllers

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// mustTarget builds spec, a literal of the tests: a spec NewTarget refuses
// is a mistake in the test, which panics.
func mustTarget(spec probing.TargetSpec) probing.Target {
	target, err := probing.NewTarget(spec)
	if err != nil {
		panic(err)
	}
	return target
}

var (
	t0       = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	probed   = t0.Add(time.Hour)
	answered = probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200}
	expiring = probing.Result{Success: true, Reason: probing.ReasonSucceeded, Message: probing.ReadyMessage, StatusCode: 200, CertificateWarning: "expires soon"}
	timedOut = probing.Result{Reason: probing.ReasonTimeout, Message: "timed out"}
	refused  = probing.Result{Reason: probing.ReasonConnectionFailed, Message: "refused"}
)

func readyWas(status metav1.ConditionStatus, reason string) *metav1.Condition {
	return &metav1.Condition{Type: webcheckerv1alpha1.ConditionReady, Status: status, Reason: reason, Message: "before",
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(t0)}
}

func TestNextReady(t *testing.T) {
	th := scheduler.Thresholds{Failure: 3, Success: 2}
	tests := map[string]struct {
		stored     *metav1.Condition
		result     probing.Result
		streak     int
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMoved  bool // lastTransitionTime is the probe's
	}{
		"first result decides":                {nil, timedOut, 1, metav1.ConditionFalse, "Timeout", true},
		"pending: first result decides":       {readyWas(metav1.ConditionUnknown, "Pending"), timedOut, 1, metav1.ConditionFalse, "Timeout", true},
		"True, 1 of 3 failures":               {readyWas(metav1.ConditionTrue, "ProbeSucceeded"), timedOut, 1, metav1.ConditionTrue, "ProbeSucceeded", false},
		"True, 2 of 3 failures":               {readyWas(metav1.ConditionTrue, "ProbeSucceeded"), timedOut, 2, metav1.ConditionTrue, "ProbeSucceeded", false},
		"True, 3 of 3 failures":               {readyWas(metav1.ConditionTrue, "ProbeSucceeded"), timedOut, 3, metav1.ConditionFalse, "Timeout", true},
		"False, 1 of 2 successes":             {readyWas(metav1.ConditionFalse, "Timeout"), answered, 1, metav1.ConditionFalse, "Timeout", false},
		"False, 2 of 2 successes":             {readyWas(metav1.ConditionFalse, "Timeout"), answered, 2, metav1.ConditionTrue, "ProbeSucceeded", true},
		"False, another failure class":        {readyWas(metav1.ConditionFalse, "Timeout"), refused, 1, metav1.ConditionFalse, "ConnectionFailed", false},
		"True, certificate expiring":          {readyWas(metav1.ConditionTrue, "ProbeSucceeded"), expiring, 1, metav1.ConditionTrue, "ProbeSucceeded", false},
		"False, certificate expiring, 2 of 2": {readyWas(metav1.ConditionFalse, "Timeout"), expiring, 2, metav1.ConditionTrue, "ProbeSucceeded", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := &scheduler.Outcome{Generation: 2, Result: tc.result, Time: probed, Streak: tc.streak}
			var conditions []metav1.Condition
			if tc.stored != nil {
				conditions = append(conditions, *tc.stored)
			}
			setCondition(&conditions, nextReady(tc.stored, o, th))
			got := conditions[0]
			assert.Equal(t, tc.wantStatus, got.Status)
			assert.Equal(t, tc.wantReason, got.Reason)
			assert.EqualValues(t, 2, got.ObservedGeneration, "the condition is evaluated at the probe's generation")
			if tc.wantMoved {
				assert.Equal(t, probed, got.LastTransitionTime.Time)
			} else if tc.stored != nil {
				assert.Equal(t, t0, got.LastTransitionTime.Time)
			}
		})
	}
}

func TestSetConditionNeverMovesTransitionTimeBackwards(t *testing.T) {
	conditions := []metav1.Condition{*readyWas(metav1.ConditionFalse, "Timeout")}
	// Another replica's clock is ahead: its transition is later than our
	// probe.
	setCondition(&conditions, readyCondition(&scheduler.Outcome{Result: answered, Time: t0.Add(-time.Minute)}))
	assert.Equal(t, metav1.ConditionTrue, conditions[0].Status)
	assert.Equal(t, t0, conditions[0].LastTransitionTime.Time)
}

func TestCertificateCondition(t *testing.T) {
	expiry := func(d time.Duration) *time.Time { e := probed.Add(d); return &e }
	target := func(url string, warning time.Duration) probing.Target {
		return mustTarget(probing.TargetSpec{URL: url, Method: http.MethodGet, Timeout: time.Second, CertExpiryWarning: warning})
	}
	https := target("https://example.com/", 14*24*time.Hour)
	tests := map[string]struct {
		target     probing.Target
		result     probing.Result
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		"plain HTTP":                     {target("http://example.com/", 0), answered, metav1.ConditionUnknown, "NotApplicable"},
		"no TLS response":                {https, probing.Result{Reason: probing.ReasonTLSError}, metav1.ConditionUnknown, "NoCertificate"},
		"valid":                          {https, withExpiry(answered, expiry(30*24*time.Hour)), metav1.ConditionTrue, "Valid"},
		"expiring, as the prober says":   {https, withExpiry(expiring, expiry(24*time.Hour)), metav1.ConditionFalse, "ExpiringSoon"},
		"expiring, behind a 500":         {https, withExpiry(probing.Result{Reason: probing.ReasonUnexpectedStatus, StatusCode: 500}, expiry(24*time.Hour)), metav1.ConditionFalse, "ExpiringSoon"},
		"expired, verification skipped":  {https, withExpiry(expiring, expiry(-time.Hour)), metav1.ConditionFalse, "Expired"},
		"warning off":                    {target("https://example.com/", 0), withExpiry(answered, expiry(time.Hour)), metav1.ConditionTrue, "Valid"},
		"untrusted, verification failed": {https, withExpiry(probing.Result{Reason: probing.ReasonTLSError, Certificate: &probing.Certificate{}}, expiry(30*24*time.Hour)), metav1.ConditionFalse, "NotVerified"},
		"expired, verification failed":   {https, withExpiry(probing.Result{Reason: probing.ReasonTLSError, Certificate: &probing.Certificate{}}, expiry(-time.Hour)), metav1.ConditionFalse, "Expired"},
		"redirected to https":            {target("http://example.com/", time.Hour), withExpiry(answered, expiry(48*time.Hour)), metav1.ConditionTrue, "Valid"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := certificateCondition(&scheduler.Outcome{Generation: 1, Result: tc.result, Time: probed}, tc.target)
			assert.Equal(t, webcheckerv1alpha1.ConditionCertificateValid, c.Type)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.NotEmpty(t, c.Message)
		})
	}
}

func withExpiry(r probing.Result, e *time.Time) probing.Result {
	r.CertificateExpiry = e
	return r
}
