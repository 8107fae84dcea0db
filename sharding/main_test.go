package sharding_test

import (
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/networkio/webchecker/e2e/framework"
)

// cp is the control plane every test of this package talks to.
var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	// The caches the tests start log through controller-runtime's logger.
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	os.Exit(framework.RunWithControlPlane(func(started *framework.ControlPlane) int {
		cp = started
		return m.Run()
	}))
}
