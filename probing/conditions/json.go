package conditions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// parseJSON parses body as JSON into CEL values: objects are maps with
// string keys, arrays lists, numbers doubles, null null.
func parseJSON(body []byte) (ref.Val, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("response body is empty, not JSON")
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("response body is not JSON: %w", err)
	}
	return valueAdapter{}.NativeToValue(v), nil
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

// sortedMap is a map with string keys whose iteration is sorted.
type sortedMap struct {
	traits.Mapper
	keys []string
}

var _ traits.Zeroer = (*sortedMap)(nil)

func newSortedMap(m traits.Mapper, n int, keys func(yield func(string) bool)) *sortedMap {
	sorted := make([]string, 0, n)
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	return &sortedMap{Mapper: m, keys: sorted}
}

// Iterator implements traits.Iterable: the keys in order.
func (m *sortedMap) Iterator() traits.Iterator {
	return types.NewStringList(types.DefaultTypeAdapter, m.keys).Iterator()
}

// IsZeroValue implements traits.Zeroer (optional.ofNonZeroValue).
func (m *sortedMap) IsZeroValue() bool { return len(m.keys) == 0 }
