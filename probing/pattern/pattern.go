package pattern

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"time"
	"unicode/utf8"
)

// Limits of the regular expressions users write.
const (
	// MaxProgramSize is the size at most of a compiled expression's
	// program, in instructions (see Size).
	MaxProgramSize = 2000
	// MaxPatternBytes is the length at most of an expression (the CRD's
	// MaxLength for the fields, and the longest pattern matches() takes).
	MaxPatternBytes = 1024
	// MaxWork is the work at most of the matches of one field in one probe,
	// in steps (program size × bytes of input): in the worst case 0.3 s of
	// one core (9.4 ns per step, BenchmarkWorstMatch) to 0.6 s (18 ns, a
	// large Unicode class) on the loaded 2-core machine this project is
	// measured on, far less for most expressions.
	MaxWork = 1 << 25
)

// worstStepTime is the time of one step of the matcher, in the worst case
// measured (a large Unicode class on a loaded machine was 18 ns), with a
// margin: a match whose Size × len(input) × worstStepTime fits in the time
// left runs without deadline checks.
const worstStepTime = 40 * time.Nanosecond

// deadlineCheckRunes is how many runes MatchContext reads between two
// checks of the deadline when it checks.
const deadlineCheckRunes = 256

// ErrTooComplex is what every *TooComplexError is (errors.Is).
var ErrTooComplex = errors.New("regular expression too complex")

// TooComplexError is an expression refused for its cost: a program over
// MaxProgramSize instructions, a pattern over MaxPatternBytes, or (from
// CheckWork) a program too large for the input it may be matched on.
type TooComplexError struct {
	// Size is the program size (saturated at a few times the limit), or
	// the pattern's length when PatternBytes is set.
	Size int64
	// PatternBytes is set when the pattern is longer than MaxPatternBytes.
	PatternBytes bool
	// InputBytes is set by CheckWork: the input the expression may be
	// matched on, whose product with Size is over MaxWork.
	InputBytes int64
}

// Error implements error. It says what is over which limit; it holds
// nothing of the pattern itself.
func (e *TooComplexError) Error() string {
	switch {
	case e.PatternBytes:
		return fmt.Sprintf("regular expression too complex: longer than %d bytes", MaxPatternBytes)
	case e.InputBytes > 0:
		return fmt.Sprintf("regular expression too complex for its input: %d instructions × %d bytes is more than %d steps of matching work (at most %d bytes for this expression)",
			e.Size, e.InputBytes, MaxWork, MaxWork/e.Size)
	case e.Size >= saturation:
		return fmt.Sprintf("regular expression too complex: its program has more than %d instructions, far more than %d", int64(saturation), MaxProgramSize)
	}
	return fmt.Sprintf("regular expression too complex: its program has %d instructions, more than %d", e.Size, MaxProgramSize)
}

// Is implements errors.Is: a *TooComplexError is ErrTooComplex.
func (e *TooComplexError) Is(target error) bool { return target == ErrTooComplex }

// Regexp is a compiled expression whose program is at most MaxProgramSize
// instructions. It is safe for concurrent use.
type Regexp struct {
	re   *regexp.Regexp
	size int64
}

// Compile parses expr (RE2 syntax, as regexp.Compile) and compiles it,
// refusing with a *TooComplexError an expression longer than
// MaxPatternBytes or whose program is over MaxProgramSize instructions,
// before its program is built. Other errors are regexp's own, wrapped.
func Compile(expr string) (*Regexp, error) {
	if len(expr) > MaxPatternBytes {
		return nil, &TooComplexError{Size: int64(len(expr)), PatternBytes: true}
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	size := Size(parsed)
	if size > MaxProgramSize {
		return nil, &TooComplexError{Size: size}
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	return &Regexp{re: re, size: max(size, 1)}, nil
}

// MustCompile is Compile for expressions known to be valid (tests,
// constants); it panics otherwise.
func MustCompile(expr string) *Regexp {
	re, err := Compile(expr)
	if err != nil {
		panic(err)
	}
	return re
}

// String is the expression as written.
func (r *Regexp) String() string { return r.re.String() }

// Size is the size of r's program in instructions (see the package
// documentation): a match takes at most Size steps per byte of input.
func (r *Regexp) Size() int64 { return r.size }

// Work is the most steps a match of r on n bytes takes.
func (r *Regexp) Work(n int) int64 { return r.size * int64(max(n, 1)) }

// Match reports whether r matches b (anywhere), without a deadline: the
// caller bounds len(b) (see CheckWork).
func (r *Regexp) Match(b []byte) bool { return r.re.Match(b) }

// MatchString is Match for a string.
func (r *Regexp) MatchString(s string) bool { return r.re.MatchString(s) }

// MatchContext is Match, stopped when ctx ends: it returns ctx's error
// then (and false). A match whose worst case fits in the time left before
// ctx's deadline runs as Match does; a longer one reads b through a reader
// that checks ctx every few hundred runes, slower but interruptible.
func (r *Regexp) MatchContext(ctx context.Context, b []byte) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	deadline, ok := ctx.Deadline()
	if !ok && ctx.Done() == nil {
		return r.re.Match(b), nil
	}
	if ok && time.Duration(r.Work(len(b))) < time.Until(deadline)/worstStepTime {
		return r.re.Match(b), nil
	}
	in := &deadlineReader{ctx: ctx, b: b}
	matched := r.re.MatchReader(in)
	if in.err != nil {
		return false, in.err
	}
	return matched, nil
}

// MatchStringContext is MatchContext for a string.
func (r *Regexp) MatchStringContext(ctx context.Context, s string) (bool, error) {
	return r.MatchContext(ctx, []byte(s))
}

// CheckWork returns a *TooComplexError when matching r on inputBytes bytes
// could take more than MaxWork steps.
func CheckWork(r *Regexp, inputBytes int64) error {
	if r.size*max(inputBytes, 1) > MaxWork {
		return &TooComplexError{Size: r.size, InputBytes: inputBytes}
	}
	return nil
}

// deadlineReader reads b rune by rune (as regexp reads a []byte: an
// invalid byte is U+FFFD of width 1) and ends early, with err set, once
// ctx ends.
type deadlineReader struct {
	ctx context.Context
	b   []byte
	n   int
	err error
}

var _ io.RuneReader = (*deadlineReader)(nil)

// ReadRune implements io.RuneReader.
func (d *deadlineReader) ReadRune() (rune, int, error) {
	if len(d.b) == 0 {
		return 0, 0, io.EOF
	}
	if d.n++; d.n%deadlineCheckRunes == 0 {
		if d.err = d.ctx.Err(); d.err != nil {
			return 0, 0, d.err
		}
	}
	if c := d.b[0]; c < utf8.RuneSelf {
		d.b = d.b[1:]
		return rune(c), 1, nil
	}
	r, size := utf8.DecodeRune(d.b)
	d.b = d.b[size:]
	return r, size, nil
}
