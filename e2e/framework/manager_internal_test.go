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

// fakeManagerHealthFirst, as the value of fakeManagerEnv, makes the fake
// manager answer /readyz before it binds its metrics address, as the
// manager may (it starts both servers at once).
const fakeManagerHealthFirst = "health-first"

// fakeManager binds the health and metrics addresses it is given, as the
// manager does (the metrics address first, unless fakeManagerEnv says
// fakeManagerHealthFirst), exits 1 saying "address already in use" when it
// cannot, and otherwise answers /readyz until it is killed.
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
	order := []string{metrics, health}
	if os.Getenv(fakeManagerEnv) == fakeManagerHealthFirst {
		order = []string{health, metrics}
	}
	for _, addr := range order {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Println("running manager:", err)
			return 1
		}
		if addr == health {
			mux := http.NewServeMux()
			mux.HandleFunc("/readyz", func(http.ResponseWriter, *http.Request) {})
			go func() { _ = http.Serve(l, mux) }()
			if order[0] == health {
				time.Sleep(300 * time.Millisecond) // ready a while first
			}
		}
	}
	select {}
}

// TestStartManagerRetriesTakenPort: a manager whose metrics port was taken
// between being picked and being bound is started again on new ports, and
// the caller gets a healthy manager, not the bind error, also when the
// manager was ready before it failed to bind its metrics port.
func TestStartManagerRetriesTakenPort(t *testing.T) {
	for _, mode := range []string{"metrics-first", fakeManagerHealthFirst} {
		t.Run(mode, func(t *testing.T) {
			// The first attempt's metrics address is taken as it is in
			// the wild: by a connection's ephemeral port, where nothing
			// listens.
			server, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer server.Close()
			conn, err := net.Dial("tcp", server.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			taken := conn.LocalAddr()
			picked := 0
			pickAddrs = func(n int) ([]string, error) {
				picked++
				addrs, err := FreeLoopbackAddrs(n)
				if err == nil && picked == 1 {
					addrs[1] = taken.String()
				}
				return addrs, err
			}
			defer func() { pickAddrs = FreeLoopbackAddrs }()
			t.Setenv(fakeManagerEnv, mode)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m, err := StartManager(ctx, ManagerOptions{Binary: os.Args[0], ShardID: "fake", DNSServer: "127.0.0.1:53"})
			require.NoError(t, err)
			defer func() { _ = m.Kill() }()
			assert.Equal(t, 2, picked, "two attempts")
			assert.NotEqual(t, taken.String(), m.MetricsAddr)
			assert.False(t, m.Exited(), "running")
		})
	}
}

// TestFreeLoopbackAddrsAreDistinct: the addresses picked for one manager
// are never the same port, which picking them one after the other could
// give (the kernel hands a released port out again).
func TestFreeLoopbackAddrsAreDistinct(t *testing.T) {
	for range 200 {
		addrs, err := FreeLoopbackAddrs(2)
		require.NoError(t, err)
		require.Len(t, addrs, 2)
		require.NotEqual(t, addrs[0], addrs[1])
	}
}
