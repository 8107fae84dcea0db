package probetest

import (
	"net/netip"
	"syscall"
	"testing"
)

// RefusedAddr returns an address of 127.0.0.1 (host:port) to which every
// TCP connection is refused, for as long as the test runs.
//
// The port stays bound to a socket that never listens, closed when the test
// ends: the kernel answers a connection attempt with a reset, and no other
// listener (of this test binary or of any process) can take the port
// meanwhile. A port merely closed after a listener had it is free for the
// next listener that asks for any port, and under parallel tests one does:
// a probe meant to be refused would then reach a stranger's server.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("creating a socket: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("binding a socket to 127.0.0.1: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("reading the bound port: %v", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("the bound socket's address is a %T", sa)
	}
	return netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)).String()
}
