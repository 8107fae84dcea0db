package probing

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// refusingJudge fails every answer, as a Judge cut short by its context
// does.
type refusingJudge struct{}

func (refusingJudge) Judge(context.Context, *Answer) (bool, string) {
	return false, "condition 1 failed"
}
func (refusingJudge) Source() string  { return "false" }
func (refusingJudge) NeedsBody() bool { return false }

// TestJudgeAnswer: a false judgement is ConditionFailed, unless the
// context ended while judging: then it is a Timeout, not the conditions'
// verdict.
func TestJudgeAnswer(t *testing.T) {
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := map[string]struct {
		ctx         context.Context
		wantReason  Reason
		wantMessage string
	}{
		"judged":    {context.Background(), ReasonConditionFailed, "condition 1 failed"},
		"timed out": {expired, ReasonTimeout, "timeout while judging the conditions"},
		"cancelled": {cancelled, ReasonTimeout, "probe cancelled while judging its conditions: context canceled"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := Result{Success: true, Reason: ReasonSucceeded, Message: ReadyMessage, CertificateWarning: "expires soon"}
			judgeAnswer(tc.ctx, refusingJudge{}, &Answer{Kind: KindHTTP}, &res)
			assert.False(t, res.Success)
			assert.Equal(t, tc.wantReason, res.Reason)
			assert.Equal(t, tc.wantMessage, res.Message)
			assert.Empty(t, res.CertificateWarning)
		})
	}
}
