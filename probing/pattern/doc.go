// Package pattern compiles the regular expressions a WebChecker's user
// writes (spec.bodyMatch.regex, spec.tcp.expect, spec.dns.answerMatch and
// the patterns of matches() in spec.conditions) with bounds on what they
// cost the operator, and matches them within a deadline.
//
// # Program size
//
// An RE2 expression (Go syntax) compiles to a program whose size, in
// instructions, bounds both its memory (about 40 bytes per instruction
// once compiled, as much again per match in progress) and its matching
// time (at most one step per instruction per byte of input). Compile
// refuses an expression whose program would have more than MaxProgramSize
// instructions, or that is longer than MaxPatternBytes, with a
// *TooComplexError. It counts the instructions on the parse tree, before
// anything is compiled: Go's compiler builds the whole program first, and
// a 1 KiB pattern of copies of .{1000} compiles to 145,000 instructions
// (38 MB allocated). The count (Size) mirrors what regexp/syntax's
// Simplify and Compile produce; it is never below the program's length
// and equal to it for most expressions.
//
// # Matching work
//
// The work of one match is at most Size × len(input) steps. The callers
// bound it at build time (CheckWork: the program size times the most input
// a field lets the target send, at most MaxWork steps) or per probe (DNS
// answers, CEL's cost), and MatchContext stops at the caller's deadline:
// Go's matcher cannot be interrupted, so a match whose worst case could
// outlast the time left reads its input through a reader that checks the
// deadline every few hundred bytes.
package pattern
