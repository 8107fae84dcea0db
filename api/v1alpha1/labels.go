package v1alpha1

import (
	"fmt"
	"strconv"
)

// SLOObjectiveLabel, on a WebChecker, sets the availability objective its
// error-budget alerts use instead of the chart's default
// (metrics.prometheusRule.slo.objective): the share of probes that must
// succeed over 30 days, a number between 0 and 1 exclusive, such as
// "0.999". The operator exports it as webchecker_slo_objective.
const SLOObjectiveLabel = "test.network.io/slo-objective"

// SLOObjective returns the objective that labels set through
// SLOObjectiveLabel, and false when they set none. A value that is not a
// number between 0 and 1 exclusive is an error.
func SLOObjective(labels map[string]string) (float64, bool, error) {
	value, ok := labels[SLOObjectiveLabel]
	if !ok {
		return 0, false, nil
	}
	objective, err := strconv.ParseFloat(value, 64)
	if err != nil || !(objective > 0 && objective < 1) {
		return 0, false, fmt.Errorf("label %s=%q: the objective must be a number between 0 and 1 exclusive, such as 0.999", SLOObjectiveLabel, value)
	}
	return objective, true, nil
}
