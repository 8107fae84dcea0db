package probetest_test

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/probetest"
)

// TestRefusedAddr checks that a connection to the address is refused and
// that no listener can take its port while the test runs.
func TestRefusedAddr(t *testing.T) {
	addr := probetest.RefusedAddr(t)
	host, _, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)

	_, err = net.DialTimeout("tcp", addr, 5*time.Second)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "dial: %v", err)

	ln, err := net.Listen("tcp", addr)
	if err == nil {
		_ = ln.Close()
	}
	assert.True(t, errors.Is(err, syscall.EADDRINUSE), "listen: %v", err)
}
