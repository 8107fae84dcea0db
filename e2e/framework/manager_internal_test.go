package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeManagerEnv, when set, makes the test binary act as a manager that
// listens on its health and metrics addresses (see fakeManager).
const fakeManagerEnv = "WEBCHECKER_FRAMEWORK_FAKE_MANAGER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeManagerEnv) != "" {
		os.Exit(fakeManager(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeManager binds the health and metrics addresses it is given, as the
// manager does, exits 1 saying "address already in use" when it cannot,
// and otherwise answers /readyz until it is killed.
func fakeManager(args []string) int {
	var health, metrics string
	for _, arg := range args { // the manager's other flags are ignored
		if v, ok := strings.CutPrefix(arg, "--health-probe-bind-address="); ok {
			health = v
		}
		if v, ok := strings.CutPrefix(arg, "--metrics-bind-address="); ok {
			metrics = v
		}
	}
	for _, addr := range []string{metrics, health} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Println("running manager:", err)
			return 1
		}
		if addr == health {
			mux := http.NewServeMux()
			mux.HandleFunc("/readyz", func(http.ResponseWriter, *http.Request) {})
			_ = http.Serve(l, mux)
		}
	}
	return 0
}

// TestStartManagerRetriesTakenPort: a manager whose metrics port was taken
// between being picked and being bound is started again on new ports, and
// the caller gets a healthy manager, not the bind error.
func TestStartManagerRetriesTakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	picked := 0
	pickAddr = func() (string, error) {
		picked++
		if picked == 2 { // the first attempt's metrics address
			return taken.Addr().String(), nil
		}
		return FreeLoopbackAddr()
	}
	defer func() { pickAddr = FreeLoopbackAddr }()
	t.Setenv(fakeManagerEnv, "1")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := StartManager(ctx, ManagerOptions{Binary: os.Args[0], ShardID: "fake", DNSServer: "127.0.0.1:53"})
	require.NoError(t, err)
	defer func() { _ = m.Kill() }()
	assert.Equal(t, 4, picked, "two attempts, two addresses each")
	assert.NotEqual(t, taken.Addr().String(), m.MetricsAddr)
}
