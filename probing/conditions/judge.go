package conditions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"

	"github.com/networkio/webchecker/probing"
)

// judge is the Judge of a list of conditions. It is immutable.
type judge struct {
	kind      probing.Kind
	conds     []compiled
	source    string
	needsBody bool
}

var _ probing.Judge = (*judge)(nil)

// Judge implements probing.Judge: it evaluates the conditions in order;
// the first that is false, or cannot be evaluated, decides the message.
func (j *judge) Judge(ctx context.Context, a *probing.Answer) (bool, string) {
	ok, msg, _ := j.evaluate(ctx, a)
	return ok, msg
}

// evaluate is Judge, with the state of the evaluation (tests).
func (j *judge) evaluate(ctx context.Context, a *probing.Answer) (bool, string, *state) {
	switch {
	case a == nil:
		return false, "conditions not evaluated: the probe has no answer", nil
	case a.Kind != j.kind:
		return false, fmt.Sprintf("conditions not evaluated: conditions of %s probes cannot judge a %s probe", j.kind, a.Kind), nil
	}
	evalCtx, cancel := context.WithTimeout(ctx, MaxEvaluationTime)
	defer cancel()
	s := newState(a, time.Now())
	for i, c := range j.conds {
		// Before each condition: CEL checks the context only between
		// comprehension iterations, and a condition without one (a costly
		// matches()) runs to its end or its cost limit.
		if err := evalCtx.Err(); err != nil {
			return false, j.unevaluated(i, evalError(ctx, evalCtx, err)), s
		}
		out, _, err := c.program.ContextEval(evalCtx, s)
		if err != nil {
			return false, j.unevaluated(i, evalError(ctx, evalCtx, err)), s
		}
		if b, isBool := out.(types.Bool); !isBool {
			return false, j.unevaluated(i, fmt.Sprintf("the result is %s, not bool", out.Type().TypeName())), s
		} else if !b {
			return false, j.failed(i), s
		}
	}
	return true, "", s
}

// evalError is the reason of an evaluation's error err: the caller's
// context ended, the evaluation took longer than MaxEvaluationTime, or
// the error of the expression, as a fixed text of its kind (evalErrorText).
func evalError(ctx, evalCtx context.Context, err error) string {
	switch {
	case strings.Contains(err.Error(), "cost limit exceeded"):
		// The cost stopped it, even if a deadline passed meanwhile.
		return evalErrorText(err)
	case ctx.Err() != nil:
		return "probe cancelled: " + ctx.Err().Error()
	case evalCtx.Err() != nil:
		return fmt.Sprintf("the evaluation took longer than %v", MaxEvaluationTime)
	}
	return evalErrorText(err)
}

// safeError is an error whose text this package fixes: it holds nothing
// of the answer, so a message may show it.
type safeError string

func (e safeError) Error() string { return string(e) }

// evalErrorKinds are the fixed texts of CEL's evaluation errors, each
// found by a part of CEL's message that names its kind, in order. The
// rest of CEL's message can hold values of the answer (the key not found,
// the string that did not convert, an index computed from the body), so
// it is never shown.
var evalErrorKinds = []struct{ marker, text string }{
	{"cost limit exceeded", fmt.Sprintf("the evaluation exceeded its cost limit (%d)", MaxCost)},
	{"interrupted", "the evaluation was interrupted"},
	{"no such key", "no such key"},
	{"no such attribute", "no such attribute"},
	{"no such field", "no such field"},
	{"index out of range", "index out of range"},
	{"index out of bounds", "index out of range"},
	{"substring range", "index out of range"},
	{"division by zero", "division by zero"},
	{"modulus by zero", "modulus by zero"},
	{"unsigned integer overflow", "unsigned integer overflow"},
	{"integer overflow", "integer overflow"},
	{"duration overflow", "duration overflow"},
	{"timestamp overflow", "timestamp overflow"},
	{"overflow", "overflow"},
	{"range error", "value out of range of the conversion"},
	{"timestamp", "invalid timestamp: not an RFC 3339 timestamp in range"},
	{"duration", "invalid duration"},
	{"type conversion error", "invalid conversion"},
	{"no matching overload", "no such overload"},
	{"no such overload", "no such overload"},
	{"optional.none()", "optional.none() dereference"},
	{"unsupported key type", "unsupported key type"},
}

// evalErrorText is the fixed text of an evaluation error: this package's
// own (a safeError), or the text of its kind (evalErrorKinds), or a text
// that says only that there was an error.
func evalErrorText(err error) string {
	var safe safeError
	if errors.As(err, &safe) {
		return string(safe)
	}
	msg := err.Error()
	for _, k := range evalErrorKinds {
		if strings.Contains(msg, k.marker) {
			return k.text
		}
	}
	return "evaluation error (its text is not shown: it may hold what the target sent)"
}

// failed is the message of condition i being false.
func (j *judge) failed(i int) string {
	if msg := j.conds[i].Message; msg != "" {
		return probing.BoundMessage(msg)
	}
	return probing.BoundMessage(fmt.Sprintf("condition %d failed: %s", i+1, abbreviate(j.conds[i].Expression)))
}

// unevaluated is the message of condition i that could not be evaluated.
func (j *judge) unevaluated(i int, reason string) string {
	return probing.BoundMessage(fmt.Sprintf("condition %d (%s) could not be evaluated: %s", i+1, quote(j.conds[i].Expression), reason))
}

// Source implements probing.Judge: the kind and the conditions, quoted.
func (j *judge) Source() string { return j.source }

// NeedsBody implements probing.Judge: whether a condition reads
// response.body, response.json or reply.
func (j *judge) NeedsBody() bool { return j.needsBody }
