package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNamespaceLimit(t *testing.T) {
	tests := map[string]struct {
		share   float64
		workers int
		want    int
	}{
		"half of 16":                      {0.5, 16, 8},
		"half of 64":                      {DefaultNamespaceShare, 64, 32},
		"rounded up":                      {0.5, 5, 3},
		"at least one":                    {0.01, 4, 1},
		"one worker":                      {0.5, 1, 1},
		"the whole pool":                  {1, 16, 16},
		"no rounding up on float error":   {0.7, 10, 7},
		"no rounding up on float error 2": {0.3, 10, 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, namespaceLimit(tc.share, tc.workers))
		})
	}
}
