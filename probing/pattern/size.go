package pattern

import "regexp/syntax"

// saturation caps the counts of Size: far over any limit, far from
// overflowing.
const saturation = 1 << 40

// Size counts the instructions of the program that regexp/syntax compiles
// re to (after Simplify), from the parse tree: linear in the tree, and
// without building the copies a repetition makes. It is an upper bound of
// the program's length (one instruction over at most for a few shapes
// Simplify folds), counted as Compile counts: the program's Fail and Match
// instructions included. It saturates far above MaxProgramSize.
func Size(re *syntax.Regexp) int64 {
	n, _ := count(re)
	return sat(n + 2) // InstFail first, InstMatch last
}

func sat(n int64) int64 { return min(n, saturation) }

// mul is a × b, saturated.
func mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > saturation/b {
		return saturation
	}
	return a * b
}

// count returns the instructions of re's fragment and whether it can
// match the empty string (the compiler's nullable, which decides the shape
// of a star).
func count(re *syntax.Regexp) (n int64, nullable bool) {
	switch re.Op {
	case syntax.OpNoMatch:
		return 0, false
	case syntax.OpEmptyMatch:
		return 1, true
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return 1, true
		}
		return int64(len(re.Rune)), false
	case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return 1, false
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 1, true
	case syntax.OpCapture:
		n, nullable := count(re.Sub[0])
		return sat(n + 2), nullable
	case syntax.OpStar:
		return star(re.Sub[0])
	case syntax.OpPlus:
		n, nullable := count(re.Sub[0])
		return sat(n + 1), nullable
	case syntax.OpQuest:
		n, _ := count(re.Sub[0])
		return sat(n + 1), true
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return 1, true
		}
		n, nullable := int64(0), true
		for _, sub := range re.Sub {
			m, subNullable := count(sub)
			n, nullable = sat(n+m), nullable && subNullable
		}
		return n, nullable
	case syntax.OpAlternate:
		n, nullable := int64(0), false
		for i, sub := range re.Sub {
			m, subNullable := count(sub)
			if i > 0 {
				m++ // an InstAlt per alternative after the first
			}
			n, nullable = sat(n+m), nullable || subNullable
		}
		return n, nullable
	case syntax.OpRepeat:
		return repeat(re)
	}
	return 1, false
}

// star counts sub*: a loop (one InstAlt), or (sub+)? when sub can match
// the empty string (two).
func star(sub *syntax.Regexp) (int64, bool) {
	n, nullable := count(sub)
	if nullable {
		return sat(n + 2), true
	}
	return sat(n + 1), true
}

// repeat counts sub{min,max} as Simplify rewrites it: x{0} is empty, x{0,}
// x*, x{1,} x+, x{n,} n-1 copies and x+, x{n,m} n copies and m-n nested
// (x...)?.
func repeat(re *syntax.Regexp) (int64, bool) {
	sub := re.Sub[0]
	lo, hi := int64(re.Min), int64(re.Max)
	switch {
	case lo == 0 && hi == 0:
		return 1, true
	case hi == -1 && lo == 0:
		return star(sub)
	}
	n, nullable := count(sub)
	switch {
	case hi == -1: // x{n,}: n-1 copies of x, then x+
		return sat(mul(lo, n) + 1), nullable
	case lo == 1 && hi == 1:
		return n, nullable
	}
	return sat(mul(lo, n) + mul(hi-lo, n+1)), nullable || lo == 0
}
