package probetest

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// connSet is what the TCP servers of this package (BannerServer,
// DNSServer, Proxy) share: the connections they have open, to be closed by
// Close, and their goroutines, to be waited for by Close. Its zero value
// is ready to use.
type connSet struct {
	accepted atomic.Int64 // connections serve registered

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}

	// wg counts the server's goroutines: the accept loops, the goroutines
	// serving their connections and any other the server starts (wg.Go).
	wg sync.WaitGroup
}

// serve starts a goroutine that accepts the connections of ln until ln is
// closed or the set is, and serves each in a goroutine of its own with
// handle: registered (counted in accepted) before handle starts, then
// forgotten and closed when it returns. A connection accepted once the
// set is closed is closed at once, and stops the loop.
func (s *connSet) serve(ln net.Listener, handle func(net.Conn)) {
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) || s.isClosed() {
					return
				}
				continue
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				_ = c.Close()
				return
			}
			s.accepted.Add(1)
			s.addLocked(c)
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				defer s.remove(c)
				handle(c)
			}()
		}
	})
}

// add registers c, to be closed by close; false (and c closed) when the
// set is closed already.
func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return false
	}
	s.addLocked(c)
	return true
}

func (s *connSet) addLocked(c net.Conn) {
	if s.conns == nil {
		s.conns = make(map[net.Conn]struct{})
	}
	s.conns[c] = struct{}{}
}

// remove forgets c and closes it.
func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close()
}

// open returns the number of connections registered and not removed yet.
func (s *connSet) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *connSet) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// close marks the set closed and closes its connections, then calls
// closeListeners (which must make the accept loops' Accept return) and
// waits for all the goroutines of wg to return. It returns what
// closeListeners returned. It is called once, by the server's Close.
func (s *connSet) close(closeListeners func() error) error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	err := closeListeners()
	s.wg.Wait()
	return err
}
