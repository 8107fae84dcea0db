package conditions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

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
