package checkspec

import (
	"fmt"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/scheduler"
)

// windowFor resolves spec.failureWindow given the consecutive thresholds
// resolved already: the zero Window when there is none. What the API
// server rejects is an error: failures or probes outside
// 1..MaxWindowProbes, failures above probes, or a threshold other than 1
// beside a window.
func windowFor(spec *webcheckerv1alpha1.FailureWindow, thresholds scheduler.Thresholds) (scheduler.Window, error) {
	if spec == nil {
		return scheduler.Window{}, nil
	}
	maxProbes := webcheckerv1alpha1.MaxWindowProbes
	switch {
	case spec.Probes < 1 || spec.Probes > maxProbes:
		return scheduler.Window{}, fmt.Errorf("invalid target: failureWindow.probes %d must be between 1 and %d", spec.Probes, maxProbes)
	case spec.Failures < 1 || spec.Failures > spec.Probes:
		return scheduler.Window{}, fmt.Errorf("invalid target: failureWindow.failures %d must be between 1 and failureWindow.probes (%d)", spec.Failures, spec.Probes)
	case thresholds.Failure != 1 || thresholds.Success != 1:
		return scheduler.Window{}, fmt.Errorf("invalid target: failureWindow decides both ways: failureThreshold (%d) and successThreshold (%d) must be 1 with it", thresholds.Failure, thresholds.Success)
	}
	return scheduler.Window{Failures: int(spec.Failures), Probes: int(spec.Probes)}, nil
}
