package checkspec_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/networkio/webchecker/controllers/checkspec"
)

// TestEgressAllowanceOf: the annotation's ranges, bounded to 64.
func TestEgressAllowanceOf(t *testing.T) {
	ranges := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("10.0.%d.0/24", i)
		}
		return strings.Join(parts, ",")
	}
	tests := map[string]struct {
		annotations map[string]string
		want        int    // ranges
		wantErr     string // "" for none
	}{
		"no annotation":      {nil, 0, ""},
		"ranges and addrs":   {map[string]string{checkspec.EgressAllowAnnotation: " 10.0.0.0/8, 192.0.2.1 ,"}, 2, ""},
		"empty":              {map[string]string{checkspec.EgressAllowAnnotation: ""}, 0, ""},
		"64 ranges":          {map[string]string{checkspec.EgressAllowAnnotation: ranges(64)}, 64, ""},
		"65 ranges":          {map[string]string{checkspec.EgressAllowAnnotation: ranges(65)}, 0, "lists 65 ranges, more than 64"},
		"not a range":        {map[string]string{checkspec.EgressAllowAnnotation: "example.com"}, 0, `invalid address range "example.com"`},
		"another annotation": {map[string]string{"other": "10.0.0.0/8"}, 0, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: tc.annotations}}
			got, err := checkspec.EgressAllowanceOf(ns)
			if tc.wantErr != "" {
				var allowanceErr *checkspec.EgressAllowanceError
				require.ErrorAs(t, err, &allowanceErr)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, got, tc.want)
		})
	}
	got, err := checkspec.EgressAllowanceOf(nil)
	assert.NoError(t, err)
	assert.Nil(t, got)
}
