package conditions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// MaxJSONMemory bounds the memory of response.json, decoded: at most 16
// times the largest body a probe reads (1 MiB), estimated before decoding
// (jsonMemory). A body of the default 64 KiB limit is always under it, a
// 1 MiB body of typical API responses too (about 10 bytes per byte); one
// of small values or objects is refused.
const MaxJSONMemory = 16 << 20

// Errors of parseJSON, fixed texts: encoding/json's quote the body.
var (
	errJSONEmpty    = safeError("response body is empty, not JSON")
	errJSONInvalid  = safeError("response body is not JSON")
	errJSONTooLarge = safeError(fmt.Sprintf("response body is too large a JSON value: decoded, it would take more than %d bytes", MaxJSONMemory))
)

// parseJSON parses body as JSON into CEL values: objects are maps with
// string keys, arrays lists, numbers doubles, null null. A body whose
// decoded value could take more than MaxJSONMemory bytes is refused
// before decoding.
func parseJSON(body []byte) (ref.Val, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errJSONEmpty
	}
	if !json.Valid(body) {
		return nil, errJSONInvalid
	}
	if jsonMemory(body) > MaxJSONMemory {
		return nil, errJSONTooLarge
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, errJSONInvalid
	}
	return valueAdapter{}.NativeToValue(v), nil
}

// What jsonMemory charges, in bytes, from the measured memory of values
// encoding/json decodes into any (Go 1.26, amd64): a map with one entry
// takes about 270 bytes (an empty one 65), a slice 48 plus 16 per
// element, a scalar 16 to 24 (its interface and boxed value), a string or
// key its bytes more.
const (
	jsonObjectBytes = 320
	jsonArrayBytes  = 64
	jsonValueBytes  = 32
)

// jsonMemory estimates, from above, the memory the decoded value of the
// valid JSON body takes: every object, every array, every value (counted
// by the commas and colons that separate them, plus one) and the bytes of
// the body (strings). Measured, the decoded value takes at most 67 bytes
// per body byte (nested objects {"":{"":...}}), 8 for typical API
// responses, and jsonMemory is above it for every shape measured. It
// reads body once and allocates nothing.
func jsonMemory(body []byte) int64 {
	n := int64(len(body)) + jsonValueBytes
	inString, escaped := false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			n += jsonObjectBytes
		case c == '[':
			n += jsonArrayBytes
		case c == ',' || c == ':':
			n += jsonValueBytes
		}
	}
	return n
}

// valueAdapter converts the values of the answer: as CEL's, except that
// maps iterate in the order of their keys, so that a comprehension over a
// map (which stops at the first element that decides, and reports the
// first error) judges alike, with the same message, on every probe.
type valueAdapter struct{}

// NativeToValue implements types.Adapter.
func (valueAdapter) NativeToValue(v any) ref.Val {
	switch x := v.(type) {
	case map[string]any:
		return newSortedMap(types.NewStringInterfaceMap(valueAdapter{}, x), len(x), func(yield func(string) bool) {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		})
	case map[string]string:
		return newSortedMap(types.NewStringStringMap(valueAdapter{}, x), len(x), func(yield func(string) bool) {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		})
	case []any:
		return types.NewDynamicList(valueAdapter{}, x)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// sortedMap is a map with string keys whose iteration is sorted (the
// keys are sorted when first iterated).
type sortedMap struct {
	traits.Mapper
	n       int
	allKeys func(yield func(string) bool)
	once    sync.Once
	keys    []string
}

var _ traits.Zeroer = (*sortedMap)(nil)

func newSortedMap(m traits.Mapper, n int, keys func(yield func(string) bool)) *sortedMap {
	return &sortedMap{Mapper: m, n: n, allKeys: keys}
}

// Iterator implements traits.Iterable: the keys in order.
func (m *sortedMap) Iterator() traits.Iterator {
	m.once.Do(func() {
		m.keys = make([]string, 0, m.n)
		for k := range m.allKeys {
			m.keys = append(m.keys, k)
		}
		slices.Sort(m.keys)
	})
	return types.NewStringList(types.DefaultTypeAdapter, m.keys).Iterator()
}

// IsZeroValue implements traits.Zeroer (optional.ofNonZeroValue).
func (m *sortedMap) IsZeroValue() bool { return m.n == 0 }
