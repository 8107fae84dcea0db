package conditions

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celenv "github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
)

// envs are the CEL environments of the kinds, built once.
var envs = sync.OnceValues(func() (map[probing.Kind]*cel.Env, error) {
	m := make(map[probing.Kind]*cel.Env, len(probing.Kinds))
	for _, k := range probing.Kinds {
		env, err := newEnv(k)
		if err != nil {
			return nil, fmt.Errorf("cel environment of %s conditions: %w", k, err)
		}
		m[k] = env
	}
	return m, nil
})

// newEnv builds the environment of kind's conditions: its variables, the
// standard library with the extensions, and the guards.
func newEnv(kind probing.Kind) (*cel.Env, error) {
	p, err := newProvider(objectDefs)
	if err != nil {
		return nil, err
	}
	opts := []cel.EnvOption{
		cel.CustomTypeProvider(p),
		// The standard library without matches(), which guards() declares.
		cel.StdLib(cel.StdLibSubset(&celenv.LibrarySubset{ExcludeFunctions: []*celenv.Function{celenv.NewFunction("matches")}})),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		cel.EagerlyValidateDeclarations(true),
		cel.ParserExpressionSizeLimit(MaxExpressionBytes),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Bindings(),
		ext.TwoVarComprehensions(),
	}
	opts = append(opts, guards()...)
	for _, v := range append(commonVariables, kindVariables[kind]...) {
		opts = append(opts, cel.Variable(v.name, v.typ))
	}
	return cel.NewCustomEnv(opts...)
}

// programOptions are the options of every condition's program: the cost
// limit, with matches() charged by its work (matchesCost), and the
// interrupt checks.
func programOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.CostLimit(MaxCost),
		cel.CostTrackerOptions(
			interpreter.OverloadCostTracker("matches", matchesCost),
			interpreter.OverloadCostTracker("matches_string", matchesCost)),
		cel.InterruptCheckFrequency(interruptCheckFrequency),
	}
}

// regexStepsPerCost is how many steps of a regular expression's match one
// unit of cost pays for: as CEL charges one unit per ten bytes a string
// function scans, MaxCost pays for MaxRegexSteps.
const regexStepsPerCost = MaxRegexSteps / MaxCost

// matchesCost is the runtime cost of a call of matches(): the most steps
// the match could take, program size × (1 + the string's length), in
// units of regexStepsPerCost. CEL's own estimate charges by the pattern's
// length, a tenth of the length of a 1000-instruction .{1000}. A pattern
// that did not compile costs one.
func matchesCost(args []ref.Val, _ ref.Val) *uint64 {
	cost := uint64(1)
	if len(args) == 2 {
		s, okS := args[0].(types.String)
		p, okP := args[1].(types.String)
		// A match refused for its work (errMatchesTooLong) did not run.
		if re, ok := regexps.peek(string(p)); okS && okP && ok && re.Work(len(s)) <= MaxRegexSteps {
			cost = max(1, uint64(re.Work(len(s)+1))/regexStepsPerCost)
		}
	}
	return &cost
}

// forbiddenOverloads are the functions of the libraries that conditions
// may not call, with the reason: their result can be far larger than what
// the cost limit charged before the call (the limit is checked after each
// call).
var forbiddenOverloads = map[string]string{
	"string_format": "format() is not available in conditions",
}

// guards redefine the functions whose result, or time, can be far larger
// than their arguments: the cost limit is checked only after a call, so
// these check the size of their result first (replace, join), search in
// linear time (indexOf, lastIndexOf: ext.Strings compares rune by rune,
// in time len(s) × len(sub)), or bound the steps of a regular expression
// (matches).
func guards() []cel.EnvOption {
	str, i := cel.StringType, cel.IntType
	strList := cel.ListType(cel.StringType)
	return []cel.EnvOption{
		cel.Function("matches",
			cel.Overload("matches", []*cel.Type{str, str}, cel.BoolType),
			cel.MemberOverload("matches_string", []*cel.Type{str, str}, cel.BoolType),
			cel.SingletonBinaryBinding(matches)),
		cel.Function("replace",
			cel.MemberOverload("string_replace_string_string", []*cel.Type{str, str, str}, str,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val { return replace(args[0], args[1], args[2], types.Int(-1)) })),
			cel.MemberOverload("string_replace_string_string_int", []*cel.Type{str, str, str, i}, str,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val { return replace(args[0], args[1], args[2], args[3]) }))),
		cel.Function("join",
			cel.MemberOverload("list_join", []*cel.Type{strList}, str,
				cel.UnaryBinding(func(l ref.Val) ref.Val { return join(l, types.String("")) })),
			cel.MemberOverload("list_join_string", []*cel.Type{strList, str}, str,
				cel.BinaryBinding(join))),
		cel.Function("indexOf",
			cel.MemberOverload("string_index_of_string", []*cel.Type{str, str}, i,
				cel.BinaryBinding(func(s, sub ref.Val) ref.Val { return indexOf(s, sub, types.Int(0)) })),
			cel.MemberOverload("string_index_of_string_int", []*cel.Type{str, str, i}, i,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val { return indexOf(args[0], args[1], args[2]) }))),
		cel.Function("lastIndexOf",
			cel.MemberOverload("string_last_index_of_string", []*cel.Type{str, str}, i,
				cel.BinaryBinding(func(s, sub ref.Val) ref.Val { return lastIndexOf(s, sub, nil) })),
			cel.MemberOverload("string_last_index_of_string_int", []*cel.Type{str, str, i}, i,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val { return lastIndexOf(args[0], args[1], args[2]) }))),
	}
}

// Errors of matches(), fixed texts: the pattern may be built from what
// the target sent.
var (
	errMatchesInvalid    = safeError("matches: invalid regular expression")
	errMatchesTooComplex = safeError(fmt.Sprintf("matches: regular expression too complex (more than %d instructions, or longer than %d bytes)",
		pattern.MaxProgramSize, pattern.MaxPatternBytes))
	errMatchesTooLong = safeError(fmt.Sprintf("matches: the match could take more than %d steps (program size × string length)", MaxRegexSteps))
)

// matches is s.matches(pattern), refused when the match could take more
// than MaxRegexSteps steps. Its cost is matchesCost.
func matches(s, p ref.Val) ref.Val {
	str, okS := s.(types.String)
	expr, okP := p.(types.String)
	if !okS || !okP {
		return types.NewErr("no such overload")
	}
	re, err := regexps.get(string(expr))
	switch {
	case errors.Is(err, pattern.ErrTooComplex):
		return types.WrapErr(errMatchesTooComplex)
	case err != nil:
		return types.WrapErr(errMatchesInvalid)
	case re.Work(len(str)) > MaxRegexSteps:
		return types.WrapErr(errMatchesTooLong)
	}
	return types.Bool(re.MatchString(string(str)))
}

// regexCache keeps the compiled patterns of matches(), at most
// maxCachedInstructions instructions of programs in all (it starts over
// when full): about 40 bytes each.
type regexCache struct {
	mu           sync.Mutex
	m            map[string]regexEntry
	instructions int64
}

type regexEntry struct {
	re  *pattern.Regexp
	err error
}

const maxCachedInstructions = 1 << 18

var regexps = &regexCache{m: make(map[string]regexEntry)}

// get returns the compiled pattern p (see pattern.Compile).
func (c *regexCache) get(p string) (*pattern.Regexp, error) {
	c.mu.Lock()
	e, ok := c.m[p]
	c.mu.Unlock()
	if ok {
		return e.re, e.err
	}
	re, err := pattern.Compile(p)
	size := int64(1)
	if re != nil {
		size = re.Size()
	}
	c.mu.Lock()
	if c.instructions+size > maxCachedInstructions || len(c.m) >= maxCachedInstructions {
		clear(c.m)
		c.instructions = 0
	}
	c.m[p] = regexEntry{re, err}
	c.instructions += size
	c.mu.Unlock()
	return re, err
}

// peek returns the compiled pattern p when the cache has it.
func (c *regexCache) peek(p string) (*pattern.Regexp, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[p]
	return e.re, ok && e.re != nil
}

// strings3 returns the three arguments of a string function, or false
// when one is not a string (the checker prevents that; kept so that a
// call cannot panic).
func strings3(a, b, c ref.Val) (string, string, string, bool) {
	x, ok1 := a.(types.String)
	y, ok2 := b.(types.String)
	z, ok3 := c.(types.String)
	return string(x), string(y), string(z), ok1 && ok2 && ok3
}

// replace is s.replace(old, new[, n]), refused when its result would be
// larger than MaxStringBytes.
func replace(s, old, new, n ref.Val) ref.Val {
	str, o, nw, ok := strings3(s, old, new)
	limit, okN := n.(types.Int)
	if !ok || !okN {
		return types.NewErr("no such overload")
	}
	count := int64(strings.Count(str, o)) // occurrences; runes+1 for ""
	if limit >= 0 && int64(limit) < count {
		count = int64(limit)
	}
	if size := int64(len(str)) + count*(int64(len(nw))-int64(len(o))); size > MaxStringBytes {
		return types.WrapErr(safeError(fmt.Sprintf("replace: the result would be longer than %d bytes", MaxStringBytes)))
	}
	return types.String(strings.Replace(str, o, nw, int(count)))
}

// join is l.join([sep]), refused when its result would be larger than
// MaxStringBytes.
func join(l, sep ref.Val) ref.Val {
	list, ok := l.(traits.Lister)
	s, okSep := sep.(types.String)
	if !ok || !okSep {
		return types.NewErr("no such overload")
	}
	n, _ := list.Size().(types.Int)
	parts := make([]string, 0, int(n))
	size := int64(0)
	for it := list.Iterator(); it.HasNext() == types.True; {
		elem, ok := it.Next().(types.String)
		if !ok {
			return types.WrapErr(safeError("join: the list has an element that is not a string"))
		}
		if len(parts) > 0 {
			size += int64(len(s))
		}
		if size += int64(len(elem)); size > MaxStringBytes {
			return types.WrapErr(safeError(fmt.Sprintf("join: the result would be longer than %d bytes", MaxStringBytes)))
		}
		parts = append(parts, string(elem))
	}
	return types.String(strings.Join(parts, string(s)))
}

// runeOffset returns the byte offset of the rune at index r of s, or
// false when s has fewer runes.
func runeOffset(s string, r int64) (int, bool) {
	for i := range s {
		if r == 0 {
			return i, true
		}
		r--
	}
	return len(s), r == 0
}

// indexOf is s.indexOf(sub[, offset]) as ext.Strings defines it (rune
// indexes), in linear time.
func indexOf(s, sub, offset ref.Val) ref.Val {
	str, okS := s.(types.String)
	substr, okSub := sub.(types.String)
	off, okOff := offset.(types.Int)
	if !okS || !okSub || !okOff {
		return types.NewErr("no such overload")
	}
	if off < 0 {
		return types.NewErr("index out of range: %d", off)
	}
	runes := int64(utf8.RuneCountInString(string(str)))
	switch {
	case substr == "":
		return types.Int(min(int64(off), runes))
	case int64(off) >= runes:
		return types.Int(-1)
	}
	start, _ := runeOffset(string(str), int64(off))
	pos := strings.Index(string(str[start:]), string(substr))
	if pos < 0 {
		return types.Int(-1)
	}
	return types.Int(int64(off) + int64(utf8.RuneCountInString(string(str[start:start+pos]))))
}

// lastIndexOf is s.lastIndexOf(sub[, offset]) as ext.Strings defines it
// (rune indexes; no offset searches the whole string), in linear time.
func lastIndexOf(s, sub, offset ref.Val) ref.Val {
	str, okS := s.(types.String)
	substr, okSub := sub.(types.String)
	if !okS || !okSub {
		return types.NewErr("no such overload")
	}
	runes := int64(utf8.RuneCountInString(string(str)))
	var off int64
	if offset == nil {
		if substr == "" {
			return types.Int(runes)
		}
		off = runes - 1
	} else if o, ok := offset.(types.Int); ok {
		off = int64(o)
	} else {
		return types.NewErr("no such overload")
	}
	if off < 0 {
		if offset == nil { // empty string, non-empty substring
			return types.Int(-1)
		}
		return types.NewErr("index out of range: %d", off)
	}
	switch {
	case substr == "":
		return types.Int(min(off, runes))
	case off >= runes:
		return types.Int(-1)
	}
	start, _ := runeOffset(string(str), off) // a match starts at or before start
	end := min(len(str), start+len(substr))
	pos := strings.LastIndex(string(str[:end]), string(substr))
	if pos < 0 {
		return types.Int(-1)
	}
	return types.Int(utf8.RuneCountInString(string(str[:pos])))
}
