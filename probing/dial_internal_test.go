package probing

import (
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDialerKeepAlive checks the TCP keep-alive of probe connections: off
// on the connections of one probe (every kind, and HTTP without
// ReuseConnections), which never live long enough for it and would pay
// four system calls to set it, and on for those kept between probes.
func TestDialerKeepAlive(t *testing.T) {
	t.Parallel()
	addr := serveLoopback(t, "127.0.0.1", echo)
	fresh := newDialer(ProberOptions{})
	tests := map[string]struct {
		dialer *net.Dialer
		want   bool
	}{
		"one probe's connection":      {dialer: fresh, want: false},
		"a connection kept for reuse": {dialer: withKeepAlive(fresh), want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conn, err := tc.dialer.DialContext(t.Context(), "tcp", addr)
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			raw, err := conn.(*net.TCPConn).SyscallConn()
			require.NoError(t, err)
			var on int
			var sockErr error
			require.NoError(t, raw.Control(func(fd uintptr) {
				on, sockErr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
			}))
			require.NoError(t, sockErr)
			assert.Equal(t, tc.want, on != 0, "SO_KEEPALIVE")
		})
	}
	assert.Positive(t, int64(withKeepAlive(fresh).KeepAlive))
	assert.Negative(t, int64(fresh.KeepAlive), "withKeepAlive copies the dialer")
}
