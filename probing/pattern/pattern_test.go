package pattern

import (
	"context"
	"errors"
	"regexp"
	"regexp/syntax"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// programLength is the length of the program Go compiles expr to.
func programLength(t *testing.T, expr string) int64 {
	t.Helper()
	re, err := syntax.Parse(expr, syntax.Perl)
	require.NoError(t, err)
	prog, err := syntax.Compile(re.Simplify())
	require.NoError(t, err)
	return int64(len(prog.Inst))
}

// TestSizeCountsTheProgram holds Size to the length of the program Go
// compiles: never below it, equal for these shapes.
func TestSizeCountsTheProgram(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"", "a", "abc", "(?i)abc", "[a-z]", ".", "(?s).", "^$", `\b\B`, `\A\z`,
		"a*", "a+", "a?", "a*?", "(a)", "(?:a)", "a|b", "a|b|c", "ab|cd|", "(a|b)*c",
		"a{3}", "a{2,5}", "a{0,3}", "a{3,}", "a{1,}", "a{0,}", "a{0}", "a{1}", "a{1,1}",
		"(?:ab){2,4}", "(?:a?)*", "(?:^)*", "(?:a*){3}", "(?:a|)*", "(a*)+", "(?:a|b*){2,3}",
		"[ab]{1000}c", ".{1000}.{1000}", `(?:\d+\.){3}\d+`, `"status"\s*:\s*"ok"`, "[^x]", `\pL{10}`,
	} {
		t.Run(expr, func(t *testing.T) {
			parsed, err := syntax.Parse(expr, syntax.Perl)
			require.NoError(t, err)
			got, want := Size(parsed), programLength(t, expr)
			assert.GreaterOrEqual(t, got, want, "Size below the program")
			assert.LessOrEqual(t, got, want+1, "Size far above the program")
		})
	}
}

// FuzzSizeBoundsTheProgram holds Size at or above the program's length
// for any expression Go parses.
func FuzzSizeBoundsTheProgram(f *testing.F) {
	for _, s := range []string{"a{2,5}", "(a|b*){0,3}c+", "x{3,}|y?", "(?i)ab{2}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		parsed, err := syntax.Parse(expr, syntax.Perl)
		if err != nil || len(expr) > 64 {
			return
		}
		prog, err := syntax.Compile(parsed.Simplify())
		if err != nil {
			return
		}
		if got := Size(parsed); got < int64(len(prog.Inst)) {
			t.Fatalf("Size(%q) = %d, below the program's %d instructions", expr, got, len(prog.Inst))
		}
	})
}

// worstPattern is the pattern: 1,021 bytes of copies of .{1000}
// (145,000 instructions once compiled).
var worstPattern = strings.Repeat(".{1000}", 145) + ".{10}c"

// TestCompileRefusesBeforeBuilding: a pattern of copies of .{1000} is
// refused with a *TooComplexError having allocated a few KiB, where
// compiling it first allocates 38 MB (the pre-check on the parse tree
// holds it).
func TestCompileRefusesBeforeBuilding(t *testing.T) {
	require.Len(t, worstPattern, 1021)
	_, err := Compile(worstPattern)
	var tooComplex *TooComplexError
	require.ErrorAs(t, err, &tooComplex)
	assert.ErrorIs(t, err, ErrTooComplex)
	assert.Greater(t, tooComplex.Size, int64(100_000))

	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	got := allocated(func() { _, _ = Compile(worstPattern) })
	full := allocated(func() { _, _ = regexp.Compile(worstPattern) })
	t.Logf("refused after %d bytes allocated; regexp.Compile allocates %d", got, full)
	assert.Less(t, got, uint64(256<<10), "Compile allocated %d bytes before refusing", got)
	assert.Greater(t, full, uint64(8<<20), "the pattern no longer costs regexp.Compile much: the test proves nothing")
}

// TestCompileLimits: the program size and pattern length limits, and an
// invalid expression.
func TestCompileLimits(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		expr       string
		tooComplex bool
		invalid    bool
		msg        string
	}{
		"at the limit":     {expr: "[ab]{997}[ab]{999}c"}, // 997+999+1+2 = 1999
		"just over":        {expr: "[ab]{998}[ab]{999}cd", tooComplex: true, msg: "its program has 2001 instructions, more than 2000"},
		"nested repeats":   {expr: "(?:a{20}){50}(?:b{20}){50}", tooComplex: true, msg: "more than 2000"},
		"long pattern":     {expr: strings.Repeat("a", MaxPatternBytes+1), tooComplex: true, msg: "longer than 1024 bytes"},
		"invalid":          {expr: "a(", invalid: true, msg: "invalid regular expression"},
		"plain":            {expr: `"status"\s*:\s*"ok"`},
		"huge saturated":   {expr: worstPattern, tooComplex: true, msg: "more than 2000"},
		"invalid and long": {expr: strings.Repeat("(", 2000), tooComplex: true, msg: "longer than"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			re, err := Compile(tc.expr)
			switch {
			case tc.tooComplex:
				require.ErrorIs(t, err, ErrTooComplex)
				assert.Contains(t, err.Error(), tc.msg)
			case tc.invalid:
				require.Error(t, err)
				assert.NotErrorIs(t, err, ErrTooComplex)
				assert.Contains(t, err.Error(), tc.msg)
			default:
				require.NoError(t, err)
				assert.LessOrEqual(t, re.Size(), int64(MaxProgramSize))
				assert.Equal(t, tc.expr, re.String())
			}
		})
	}
}

// TestCheckWork: a program times its input over MaxWork is refused, with
// the largest input it may have.
func TestCheckWork(t *testing.T) {
	t.Parallel()
	re := MustCompile("[ab]{997}[ab]{999}c") // 1999 instructions
	require.NoError(t, CheckWork(re, MaxWork/1999))
	err := CheckWork(re, 64<<10)
	require.ErrorIs(t, err, ErrTooComplex)
	assert.Contains(t, err.Error(), "1999 instructions × 65536 bytes")
	assert.Contains(t, err.Error(), "at most 16785 bytes")
	require.NoError(t, CheckWork(MustCompile("ok"), 1<<20))
}

// TestMatchContextStopsAtTheDeadline: a worst-case match that would take
// seconds stops at the caller's deadline; without a deadline, or with a
// deadline far enough, it matches as Match does.
func TestMatchContextStopsAtTheDeadline(t *testing.T) {
	re := MustCompile("[ab]{997}[ab]{999}c")
	input := []byte(strings.Repeat("a", 256<<10)) // 512 M steps: seconds
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	matched, err := re.MatchContext(ctx, input)
	elapsed := time.Since(start)
	assert.False(t, matched)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "err %v", err)
	assert.Less(t, elapsed, 400*time.Millisecond, "the match ran past its deadline")

	expired, cancelExpired := context.WithTimeout(context.Background(), 0)
	defer cancelExpired()
	_, err = re.MatchContext(expired, input)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "an ended context matches nothing")

	for name, tc := range map[string]struct {
		expr, input string
		want        bool
	}{
		"match":           {expr: "b+c$", input: strings.Repeat("a", 5000) + "bbc", want: true},
		"no match":        {expr: "^b", input: strings.Repeat("a", 5000) + "b"},
		"invalid UTF-8":   {expr: "a\uFFFDb", input: "a\xffb", want: true},
		"multibyte":       {expr: "ж{3}$", input: strings.Repeat("x", 700) + "жжж", want: true},
		"word boundaries": {expr: `\bfoo\b`, input: strings.Repeat("-", 600) + "foo-", want: true},
	} {
		t.Run(name, func(t *testing.T) {
			re := MustCompile(tc.expr)
			assert.Equal(t, tc.want, re.MatchString(tc.input))
			long, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, err := re.MatchStringContext(long, tc.input)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "fast path")
			// A deadline too close for the fast path reads through the
			// deadline reader: the same verdict.
			in := &deadlineReader{ctx: long, b: []byte(tc.input)}
			assert.Equal(t, tc.want, re.re.MatchReader(in), "reader path")
			require.NoError(t, in.err)
		})
	}
}
