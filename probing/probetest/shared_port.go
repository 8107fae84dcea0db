package probetest

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"testing"
)

// SharedPort returns one TCP port that, on every loopback address of
// listening, a listener serves (in the order given), and to which, on every
// loopback address of refusing, every connection is refused (a socket bound
// to it that never listens, as RefusedAddr's): a name resolving to all of
// them looks like a service behind several load-balancer addresses, some
// dead. Listeners and sockets are closed when the test ends. It fails t
// when no such port is found (say, an address is not a loopback one).
func SharedPort(t testing.TB, listening, refusing []string) (port string, listeners []net.Listener) {
	t.Helper()
	if len(listening) == 0 {
		t.Fatalf("SharedPort needs an address to listen on")
	}
	for _, ip := range append(append([]string(nil), listening...), refusing...) {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() || !a.IsLoopback() {
			t.Fatalf("SharedPort: %q is no IPv4 loopback address", ip)
		}
	}
	var lastErr error
	for range 50 {
		port, listeners, err := sharedPort(listening, refusing, t.Cleanup)
		if err == nil {
			return port, listeners
		}
		lastErr = err // the port is taken on another address: try another
	}
	t.Fatalf("SharedPort: no port free on all of %v and %v: %v", listening, refusing, lastErr)
	return "", nil
}

// sharedPort makes one attempt of SharedPort: the first listener picks the
// port. cleanup registers the closing of what it keeps.
func sharedPort(listening, refusing []string, cleanup func(func())) (string, []net.Listener, error) {
	var undo []func()
	fail := func(err error) (string, []net.Listener, error) {
		for _, f := range undo {
			f()
		}
		return "", nil, err
	}
	first, err := net.Listen("tcp", net.JoinHostPort(listening[0], "0"))
	if err != nil {
		return fail(fmt.Errorf("listening on %s: %w", listening[0], err))
	}
	undo = append(undo, func() { _ = first.Close() })
	_, port, _ := net.SplitHostPort(first.Addr().String())
	listeners := []net.Listener{first}
	for _, ip := range listening[1:] {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
		if err != nil {
			return fail(fmt.Errorf("listening on %s:%s: %w", ip, port, err))
		}
		undo = append(undo, func() { _ = ln.Close() })
		listeners = append(listeners, ln)
	}
	n, _ := strconv.Atoi(port)
	for _, ip := range refusing {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return fail(fmt.Errorf("creating a socket: %w", err))
		}
		undo = append(undo, func() { _ = syscall.Close(fd) })
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: netip.MustParseAddr(ip).As4(), Port: n}); err != nil {
			return fail(fmt.Errorf("binding %s:%s: %w", ip, port, err))
		}
	}
	for _, f := range undo {
		cleanup(f)
	}
	return port, listeners, nil
}
