package conditions

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/cel-go/cel"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
)

// Limits of spec.conditions; the CRD mirrors them.
const (
	// MaxConditions is the number of conditions of a target at most.
	MaxConditions = 16
	// MaxExpressionBytes is the size of an expression at most.
	MaxExpressionBytes = 1024
	// MaxMessageBytes is the size of a condition's message at most.
	MaxMessageBytes = 256
)

// Limits of the evaluation (see the package documentation).
const (
	// MaxCost is the cost one condition's evaluation may spend at most
	// (cel.CostLimit): the evaluation stops with an error past it.
	MaxCost = 1_000_000
	// MaxStringBytes is the size at most of a string that replace() or
	// join() builds.
	MaxStringBytes = 4 << 20
	// MaxRegexProgramSize is the size at most of the program of a regular
	// expression of matches(), in RE2 instructions: matching takes at most
	// this many steps per byte of the string. It is pattern.MaxProgramSize,
	// the bound of every regular expression of a WebChecker.
	MaxRegexProgramSize = pattern.MaxProgramSize
	// MaxRegexSteps bounds the steps of one match (the size of the string
	// times the size of the program), about 0.1s: a longer match fails.
	// A match's cost is its steps over MaxRegexSteps/MaxCost, so that one
	// condition's matches take at most twice MaxRegexSteps (the cost is
	// checked after each call).
	MaxRegexSteps = 10_000_000
	// MaxEvaluationTime bounds the time of a Judge call (all conditions):
	// past it the evaluation of a comprehension stops with an error. It is
	// wall-clock time: a process starved of CPU for that long can fail a
	// condition that would hold.
	MaxEvaluationTime = 500 * time.Millisecond
	// interruptCheckFrequency is how many comprehension iterations pass
	// between two checks of the context.
	interruptCheckFrequency = 100
	// maxQuotedExpressionBytes is how much of an expression a message
	// quotes at most.
	maxQuotedExpressionBytes = 160
	// maxReasonBytes bounds the reason of a CompileError.
	maxReasonBytes = 512
)

// Condition is one of a WebChecker's spec.conditions: a CEL expression
// over the probe's answer that must evaluate to true, and the message of
// the failure when it does not.
type Condition struct {
	// Expression is the CEL expression; it must type-check to bool.
	Expression string
	// Message is the failure's message when Expression is false; empty
	// says which condition failed.
	Message string
}

// CompileError is why a condition does not compile.
type CompileError struct {
	// Index is the index of the condition in the list (from 0).
	Index int
	// Field is the field at fault: "expression" or "message".
	Field string
	// Expression is the condition's expression.
	Expression string
	// Reason is what is wrong, bounded and stable.
	Reason string
	// Err is the error behind Reason, when there is one: a
	// *pattern.TooComplexError for a pattern of matches() over the
	// pattern package's bounds (errors.Is(err, pattern.ErrTooComplex)).
	Err error
}

// Unwrap returns e.Err.
func (e *CompileError) Unwrap() error { return e.Err }

// Error implements error: condition N (from 1), its expression (quoted,
// abbreviated) and the reason.
func (e *CompileError) Error() string {
	return fmt.Sprintf("condition %d (%s): %s", e.Index+1, quote(e.Expression), e.Reason)
}

// Compile type-checks conds for the environment of kind (see the package
// documentation) and returns their Judge: nil for no conditions, so that a
// target without conditions has no Judge. The error of a condition that
// does not compile is a *CompileError.
func Compile(kind probing.Kind, conds []Condition) (probing.Judge, error) {
	if len(conds) == 0 {
		return nil, nil
	}
	if len(conds) > MaxConditions {
		return nil, fmt.Errorf("%d conditions, more than %d", len(conds), MaxConditions)
	}
	all, err := envs()
	if err != nil {
		return nil, err
	}
	env, ok := all[kind]
	if !ok {
		return nil, fmt.Errorf("conditions: unknown probe kind %q", kind)
	}
	j := &judge{kind: kind, conds: make([]compiled, len(conds))}
	var src strings.Builder
	src.WriteString(string(kind))
	for i, c := range conds {
		cc, reason, field, cause := compile(env, kind, c)
		if reason != "" {
			return nil, &CompileError{Index: i, Field: field, Expression: c.Expression, Reason: probing.Truncate(oneLine(reason), maxReasonBytes), Err: cause}
		}
		j.conds[i] = cc
		j.needsBody = j.needsBody || cc.needsBody
		fmt.Fprintf(&src, "\n%s %s", strconv.Quote(c.Expression), strconv.Quote(c.Message))
	}
	j.source = src.String()
	return j, nil
}

// compiled is a compiled condition.
type compiled struct {
	Condition
	program   cel.Program
	needsBody bool
}

// compile compiles one condition, or returns why it does not compile, the
// field at fault and the error behind (a pattern's, or nil). A panic of
// the CEL compiler is a reason too.
func compile(env *cel.Env, kind probing.Kind, c Condition) (cc compiled, reason, field string, cause error) {
	defer func() {
		if r := recover(); r != nil {
			cc, reason, field, cause = compiled{Condition: c}, fmt.Sprintf("internal error of the CEL compiler: %v", r), "expression", nil
		}
	}()
	for _, p := range literalPatterns(env, c) {
		if _, err := pattern.Compile(p); err != nil {
			return compiled{Condition: c}, err.Error(), "expression", err
		}
	}
	cc, reason, field = compileCondition(env, kind, c)
	return cc, reason, field, nil
}

// literalPatterns are the constant patterns of matches() in c's
// expression (none when it does not parse: compileCondition says why).
func literalPatterns(env *cel.Env, c Condition) []string {
	if strings.TrimSpace(c.Expression) == "" || len(c.Expression) > MaxExpressionBytes || !utf8.ValidString(c.Expression) {
		return nil
	}
	parsed, iss := env.Parse(c.Expression)
	if iss.Err() != nil {
		return nil
	}
	return scan(parsed.NativeRep().Expr()).patterns
}

func compileCondition(env *cel.Env, kind probing.Kind, c Condition) (compiled, string, string) {
	cc := compiled{Condition: c}
	switch {
	case strings.TrimSpace(c.Expression) == "":
		return cc, "the expression is empty", "expression"
	case len(c.Expression) > MaxExpressionBytes:
		return cc, fmt.Sprintf("the expression is %d bytes long, more than %d", len(c.Expression), MaxExpressionBytes), "expression"
	case !utf8.ValidString(c.Expression):
		return cc, "the expression is not valid UTF-8", "expression"
	case len(c.Message) > MaxMessageBytes:
		return cc, fmt.Sprintf("the message is %d bytes long, more than %d", len(c.Message), MaxMessageBytes), "message"
	}
	parsed, iss := env.Parse(c.Expression)
	if iss.Err() != nil {
		return cc, issuesReason(iss), "expression"
	}
	uses := scan(parsed.NativeRep().Expr())
	if reason := foreignVariables(kind, uses.free); reason != "" {
		return cc, reason, "expression"
	}
	for _, name := range uses.creates {
		if slices.ContainsFunc(objectDefs, func(d *objectDef) bool { return d.typ.TypeName() == name }) {
			return cc, fmt.Sprintf("%s cannot be created in a condition", name), "expression"
		}
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		return cc, issuesReason(iss), "expression"
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) {
		return cc, fmt.Sprintf("the expression evaluates to %s, not bool", t), "expression"
	}
	for _, ref := range checked.NativeRep().ReferenceMap() {
		for _, id := range ref.OverloadIDs {
			if reason, ok := forbiddenOverloads[id]; ok {
				return cc, reason, "expression"
			}
		}
	}
	prg, err := env.Program(checked, programOptions()...)
	if err != nil {
		return cc, err.Error(), "expression"
	}
	cc.program, cc.needsBody = prg, uses.body
	return cc, "", ""
}

// issuesReason is the compiler's errors on one line: at most three, each
// with its position.
func issuesReason(iss *cel.Issues) string {
	errs := iss.Errors()
	parts := make([]string, 0, 4)
	for i, e := range errs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more errors", len(errs)-i))
			break
		}
		msg := strings.TrimSuffix(e.Message, " (in container '')")
		if e.Location.Line() > 0 {
			msg = fmt.Sprintf("%s (at %d:%d)", msg, e.Location.Line(), e.Location.Column()+1)
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// foreignVariables reports the variables of other kinds an expression
// uses, "" when it uses none.
func foreignVariables(kind probing.Kind, free []string) string {
	for _, name := range free {
		if slices.ContainsFunc(kindVariables[kind], func(v variable) bool { return v.name == name }) {
			continue
		}
		var of []string
		for _, k := range probing.Kinds {
			if slices.ContainsFunc(kindVariables[k], func(v variable) bool { return v.name == name }) {
				of = append(of, string(k))
			}
		}
		if len(of) > 0 {
			return fmt.Sprintf("%s is not available in %s conditions, only in %s conditions", name, kind, strings.Join(of, ", "))
		}
	}
	return ""
}

// controlEscapes writes the line breaks and tabs of a reason (which may
// quote the expression) as escapes.
var controlEscapes = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`)

// oneLine is s on one line, without control characters.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, controlEscapes.Replace(strings.ToValidUTF8(s, string(utf8.RuneError))))
}

// quote is an expression in a message: quoted, abbreviated.
func quote(expr string) string { return strconv.Quote(abbreviate(expr)) }

// abbreviate cuts expr to maxQuotedExpressionBytes, marked with "…"
// (see probing.Truncate).
func abbreviate(expr string) string {
	return probing.Truncate(expr, maxQuotedExpressionBytes)
}
