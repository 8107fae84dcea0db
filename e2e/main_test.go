package e2e_test

import (
	"fmt"
	"net"
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

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	dir, err := os.MkdirTemp("", "webchecker-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if managerPath, err = framework.ManagerBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The managers resolve through this stub only: it knows nothing, so
	// every name fails fast and locally.
	if dns, err = probetest.NewDNSServer(map[string][]net.IP{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer dns.Close()
	return framework.RunWithControlPlane(func(started *framework.ControlPlane) int {
		cp = started
		return m.Run()
	})
}
