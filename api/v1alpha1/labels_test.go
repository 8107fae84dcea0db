package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

func TestSLOObjective(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		want    float64
		set     bool
		wantErr bool
	}{
		{name: "no labels"},
		{name: "other labels", labels: map[string]string{"team": "payments"}},
		{name: "three nines", labels: map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: "0.999"}, want: 0.999, set: true},
		{name: "ninety percent", labels: map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: "0.9"}, want: 0.9, set: true},
		{name: "a percentage", labels: map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: "99.9"}, wantErr: true},
		{name: "one", labels: map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: "1"}, wantErr: true},
		{name: "zero", labels: map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: "0"}, wantErr: true},
		{name: "not a number", labels: map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: "high"}, wantErr: true},
		{name: "empty", labels: map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: ""}, wantErr: true},
		{name: "NaN", labels: map[string]string{webcheckerv1alpha1.SLOObjectiveLabel: "NaN"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set, err := webcheckerv1alpha1.SLOObjective(tt.labels)
			if tt.wantErr {
				assert.ErrorContains(t, err, "between 0 and 1 exclusive")
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.set, set)
		})
	}
}
