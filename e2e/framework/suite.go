package framework

import (
	"fmt"
	"net"
	"os"

	"github.com/networkio/webchecker/probing/probetest"
)

// Suite is what an end-to-end TestMain sets up once for all its tests.
type Suite struct {
	// ManagerPath is the manager binary the tests run (see ManagerBinary).
	ManagerPath string
	// DNS is a loopback DNS stub that knows no names. The managers resolve
	// through it only, so every name fails fast and locally.
	DNS *probetest.DNSServer
}

// RunSuite is the body of an end-to-end TestMain: it finds or builds the
// manager binary, starts the DNS stub, calls run with them (run calls
// m.Run), cleans up and returns the exit code.
func RunSuite(run func(s *Suite) int) int {
	dir, err := os.MkdirTemp("", "webchecker-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s := &Suite{}
	if s.ManagerPath, err = ManagerBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if s.DNS, err = probetest.NewDNSServer(map[string][]net.IP{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.DNS.Close()
	return run(s)
}
