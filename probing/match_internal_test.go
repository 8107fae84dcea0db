package probing

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/pattern"
)

// atLimit compiles to 1999 instructions, just under the program size
// bound.
const atLimit = "[ab]{997}[ab]{999}c"

// TestMatchWorkRefusedAtBuild: a body match or a tcp expect whose program
// size times its input is over pattern.MaxWork does not build (or
// validate); under it, it does.
func TestMatchWorkRefusedAtBuild(t *testing.T) {
	t.Parallel()
	re := pattern.MustCompile(atLimit)
	body := func(re *pattern.Regexp, maxBytes int64) error {
		_, err := NewTarget(TargetSpec{URL: "http://127.0.0.1:1/", Method: "GET", Timeout: time.Second,
			BodyMatch: &BodyMatch{Regexp: re, MaxBytes: maxBytes}})
		return err
	}
	require.ErrorIs(t, body(re, 64<<10), pattern.ErrTooComplex)
	require.ErrorIs(t, body(re, 1<<20), pattern.ErrTooComplex)
	require.NoError(t, body(re, 16<<10))
	require.NoError(t, body(pattern.MustCompile(`"status":"ok"`), MaxBodyMatchBytes))

	tcp := TargetSpec{URL: "tcp://127.0.0.1:1", Timeout: time.Second, TCP: &TCPOptions{Expect: re, MaxBytes: 64 << 10}}
	_, err := NewTarget(tcp)
	require.ErrorIs(t, err, pattern.ErrTooComplex)
	tcp.TCP.MaxBytes = 16 << 10
	_, err = NewTarget(tcp)
	require.NoError(t, err)
}

// TestAnswerMatchWorkIsBounded: a hostile DNS server's long answer
// section costs the answer matches at most pattern.MaxWork steps per
// probe: past it the probe fails, without matching on.
func TestAnswerMatchWorkIsBounded(t *testing.T) {
	t.Parallel()
	re := pattern.MustCompile(atLimit)
	records := make([]string, 200)
	for i := range records {
		records[i] = "a.test. 300 IN TXT \"" + strings.Repeat("a", 250) + "\""
	}
	o := &DNSOptions{AnswerMatch: []*pattern.Regexp{re}}
	q := &dnsQuery{prefix: "dns a.test: "}
	start := time.Now()
	res := judgeDNS(context.Background(), o, q, &dnsResponse{rcode: "NOERROR", answers: records})
	elapsed := time.Since(start)
	assert.Equal(t, ReasonAnswerMismatch, res.Reason)
	assert.Equal(t, "dns a.test: answer section too large to match: answerMatch[0] would take more than 33554432 steps of matching work", res.Message)
	t.Logf("stopped after %v", elapsed)

	// Within the budget, the records match as before.
	small := &DNSOptions{AnswerMatch: []*pattern.Regexp{pattern.MustCompile(`IN TXT "a+"$`)}}
	res = judgeDNS(context.Background(), small, q, &dnsResponse{rcode: "NOERROR", answers: records})
	assert.True(t, res.Success, res.Message)

	// A probe whose deadline passed matches nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = judgeDNS(ctx, small, q, &dnsResponse{rcode: "NOERROR", answers: records})
	assert.Equal(t, ReasonTimeout, res.Reason)
}

// TestBodyMatchStopsAtTheDeadline: a body match stops at the probe's
// deadline (a target built past NewTarget, whose work bound refuses it,
// shows the deadline alone stops it).
func TestBodyMatchStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	target := &builtTarget{TargetSpec: TargetSpec{BodyMatch: &BodyMatch{Regexp: pattern.MustCompile(atLimit), MaxBytes: 1 << 20}}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := judge(ctx, target, &http.Response{StatusCode: 200}, []byte(strings.Repeat("a", 1<<20)))
	assert.Equal(t, ReasonTimeout, res.Reason)
	assert.Equal(t, "timeout while matching the response body with bodyMatch", res.Message)
	assert.Less(t, time.Since(start), time.Second)
}
