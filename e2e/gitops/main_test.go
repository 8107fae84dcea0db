package gitops

import (
	"os"
	"testing"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

var (
	cp          *framework.ControlPlane
	managerPath string
	dns         *probetest.DNSServer
)

// TestMain runs the tests with the manager binary, the DNS stub and one
// control plane (with the CRDs) that they share.
func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(func(s *framework.Suite) int {
		managerPath, dns = s.ManagerPath, s.DNS
		return framework.RunWithControlPlane(func(started *framework.ControlPlane) int {
			cp = started
			return m.Run()
		})
	}))
}
