package pattern

import (
	"runtime"
	"strings"
	"testing"
)

// atLimit compiles to 1999 instructions: [ab]{997}[ab]{999}c, or with a
// large Unicode class (the slowest step measured).
var limitPatterns = map[string]string{
	"class":         "[ab]{997}[ab]{999}c",
	"unicode class": `[\pL\pN]{997}[\pL\pN]{999}c`,
}

// BenchmarkWorstMatch is the worst case at the limit: every instruction
// alive on every byte of 16 KiB of "a" (longer than the expression's
// shortest match, or Go's matcher returns at once). Time per KiB is the
// time per op over 16 (go test -bench WorstMatch ./probing/pattern/).
func BenchmarkWorstMatch(b *testing.B) {
	input := []byte(strings.Repeat("a", 16<<10))
	for name, expr := range limitPatterns {
		re := MustCompile(expr)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			for b.Loop() {
				re.Match(input)
			}
		})
	}
}

// TestMemoryAtTheLimit logs the memory one compiled expression at the
// limit keeps, and what compiling it allocates (go test -v -run
// MemoryAtTheLimit ./probing/pattern/).
func TestMemoryAtTheLimit(t *testing.T) {
	const copies = 50
	for name, expr := range limitPatterns {
		res := make([]*Regexp, copies)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range res {
			res[i] = MustCompile(expr)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		t.Logf("%s (%d instructions): %d bytes kept, %d allocated compiling", name, res[0].Size(),
			(int64(after.HeapAlloc)-int64(before.HeapAlloc))/copies, (after.TotalAlloc-before.TotalAlloc)/copies)
		runtime.KeepAlive(res)
	}
}
