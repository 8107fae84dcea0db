package chart_test

import (
	"os"
	"testing"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// The chart tests render and install the chart as release "webchecker" in
// namespace "webchecker", as the README's quick start does.
const (
	chartRelease   = "webchecker"
	chartNamespace = "webchecker"
)

var (
	managerPath string
	dns         *probetest.DNSServer
)

// TestMain runs the tests with the manager binary and the DNS stub that
// the managers of TestChartInstall and TestChartPromQLAgainstPrometheus
// need. There is no shared control plane: TestChartInstall starts an empty
// one of its own, as a new cluster is, and TestChartPromQLAgainstPrometheus
// one with the CRDs.
func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(func(s *framework.Suite) int {
		managerPath, dns = s.ManagerPath, s.DNS
		return m.Run()
	}))
}
