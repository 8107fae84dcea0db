package conditions

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celenv "github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"

	"github.com/networkio/webchecker/probing"
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

// programOptions are the options of every condition's program.
func programOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.CostLimit(MaxCost),
		cel.InterruptCheckFrequency(interruptCheckFrequency),
	}
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

// matches is s.matches(pattern), refused when the match could take more
// than MaxRegexSteps steps.
func matches(s, pattern ref.Val) ref.Val {
	str, okS := s.(types.String)
	p, okP := pattern.(types.String)
	if !okS || !okP {
		return types.NewErr("no such overload")
	}
	re, err := regexps.get(string(p))
	if err != nil {
		return types.WrapErr(err)
	}
	if int64(len(str))*int64(re.size) > MaxRegexSteps {
		return types.NewErr("matches: the regular expression (%d instructions) could take too long on a string of more than %d bytes",
			re.size, MaxRegexSteps/re.size)
	}
	return types.Bool(re.MatchString(string(str)))
}

// compiledRegex is a pattern of matches(), compiled, and the size of its
// program: matching a string takes at most size steps per byte.
type compiledRegex struct {
	*regexp.Regexp
	size int
}

// compileRegex compiles a pattern of matches() (RE2 syntax), refused when
// its program has more than MaxRegexProgramSize instructions.
func compileRegex(pattern string) (compiledRegex, error) {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return compiledRegex{}, fmt.Errorf("invalid regular expression: %w", err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return compiledRegex{}, fmt.Errorf("invalid regular expression: %w", err)
	}
	if len(prog.Inst) > MaxRegexProgramSize {
		return compiledRegex{}, fmt.Errorf("regular expression too complex: %d instructions, more than %d", len(prog.Inst), MaxRegexProgramSize)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return compiledRegex{}, fmt.Errorf("invalid regular expression: %w", err)
	}
	return compiledRegex{Regexp: re, size: max(len(prog.Inst), 1)}, nil
}

// regexCache keeps the compiled patterns of matches(), at most
// maxCachedRegexps (it starts over when full).
type regexCache struct {
	mu sync.Mutex
	m  map[string]regexEntry
}

type regexEntry struct {
	re  compiledRegex
	err error
}

const maxCachedRegexps = 1024

var regexps = &regexCache{m: make(map[string]regexEntry)}

func (c *regexCache) get(pattern string) (compiledRegex, error) {
	c.mu.Lock()
	e, ok := c.m[pattern]
	c.mu.Unlock()
	if ok {
		return e.re, e.err
	}
	re, err := compileRegex(pattern)
	c.mu.Lock()
	if len(c.m) >= maxCachedRegexps {
		clear(c.m)
	}
	c.m[pattern] = regexEntry{re, err}
	c.mu.Unlock()
	return re, err
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
		return types.NewErr("replace: the result would be longer than %d bytes", MaxStringBytes)
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
			return types.NewErr("join: the list has an element that is not a string")
		}
		if len(parts) > 0 {
			size += int64(len(s))
		}
		if size += int64(len(elem)); size > MaxStringBytes {
			return types.NewErr("join: the result would be longer than %d bytes", MaxStringBytes)
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
