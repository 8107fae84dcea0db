package conditions

import (
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestJSONMemoryIsAnUpperBound measures the live memory of the value
// encoding/json decodes for the worst shapes (many small values, nested
// objects) and holds jsonMemory above it.
func TestJSONMemoryIsAnUpperBound(t *testing.T) {
	const n = 256 << 10
	list := func(item string) string { return "[" + strings.Repeat(item+",", n/(len(item)+1)) + item + "]" }
	for name, body := range map[string]string{
		"empty objects":  list("{}"),
		"small objects":  list(`{"a":{}}`),
		"empty arrays":   list("[]"),
		"numbers":        list("1"),
		"zeros":          list("0"),
		"empty strings":  list(`""`),
		"short strings":  list(`"a"`),
		"nulls":          list("null"),
		"nested arrays":  strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
		"nested objects": strings.Repeat(`{"":`, 9999) + "1" + strings.Repeat("}", 9999),
		"typical":        list(`{"name":"service-a","status":"ok","latency":12.5,"tags":["x","y"]}`),
	} {
		// The least of three measures: what the rest of the process
		// allocates meanwhile (a test server's goroutine, the race
		// detector) only ever adds to one.
		live := int64(math.MaxInt64)
		for range 3 {
			live = min(live, decodedLive(t, name, body))
		}
		t.Logf("%-14s %7d bytes: decoded %5.1f bytes per byte, estimated %5.1f", name, len(body),
			float64(live)/float64(len(body)), float64(jsonMemory([]byte(body)))/float64(len(body)))
		assert.GreaterOrEqual(t, jsonMemory([]byte(body)), live, name)
	}
}

// decodedLive is the live heap that the value encoding/json decodes from
// body holds, measured between two collections.
func decodedLive(t *testing.T, name, body string) int64 {
	var v any
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(name, err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}
