package probetest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// ServeConns accepts connections on ln until the test ends and hands each
// to handle, with a deadline of timeout from its accept, closing it when
// handle returns. When the test ends ln is closed and every handler is
// waited for: a test server that leaves nothing running.
func ServeConns(t testing.TB, ln net.Listener, timeout time.Duration, handle func(c net.Conn)) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(timeout))
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
}
