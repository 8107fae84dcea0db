package probing_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/networkio/webchecker/probing"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		n    int
		want string
	}{
		"short enough":                 {in: "ok", n: 10, want: "ok"},
		"exactly the limit":            {in: "0123456789", n: 10, want: "0123456789"},
		"empty":                        {in: "", n: 10, want: ""},
		"cut and marked":               {in: "0123456789abc", n: 10, want: "0123456…"},
		"cut never splits a rune":      {in: "aaaaaé€€€", n: 10, want: "aaaaaé…"},
		"four-byte rune at the cut":    {in: "aaaaa😀😀", n: 10, want: "aaaaa…"},
		"a rune ending at the cut":     {in: strings.Repeat("é", 10), n: 11, want: "éééé…"},
		"invalid bytes replaced":       {in: "a\xffb", n: 10, want: "a\uFFFDb"},
		"replaced, then cut":           {in: "\xffa\xffb\xffc", n: 8, want: "\uFFFDa…"},
		"control characters kept":      {in: "a\nb\x1b", n: 10, want: "a\nb\x1b"},
		"room for the mark only":       {in: "abcdef", n: 3, want: "…"},
		"no room for the mark":         {in: "abcdef", n: 2, want: "ab"},
		"no room for the mark, a rune": {in: "€€", n: 2, want: ""},
		"zero":                         {in: "abc", n: 0, want: ""},
		"negative":                     {in: "abc", n: -1, want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := probing.Truncate(tc.in, tc.n)
			assert.Equal(t, tc.want, got)
			assert.True(t, utf8.ValidString(got))
			assert.LessOrEqual(t, len(got), max(tc.n, 0))
			assert.Equal(t, got, probing.Truncate(got, tc.n), "a truncated text is left as it is")
		})
	}
}
