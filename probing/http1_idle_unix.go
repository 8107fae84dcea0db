//go:build unix

package probing

import "syscall"

// idlePeeker peeks at the socket of an idle connection. It is set up at
// the connection's first peek and kept: a connection kept for reuse is
// peeked at before each of its requests.
type idlePeeker struct {
	raw syscall.RawConn
	// peek is raw.Read's callback, made once; it sets quiet.
	peek  func(fd uintptr) bool
	quiet bool // the last peek found neither a byte nor the end of the stream
	buf   [1]byte
}

// idleUsable tells whether an idle connection can take a request: nothing
// is buffered, and the server has neither closed it nor sent anything
// since (a peek at the socket that does not wait). http.Transport learns
// the same from the read it keeps pending on every idle connection.
func (c *http1Conn) idleUsable() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	p := &c.peeker
	if p.raw == nil {
		sc, ok := c.conn.(syscall.Conn)
		if !ok {
			return true
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		p.raw = raw
		p.peek = func(fd uintptr) bool {
			_, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			p.quiet = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK // no byte, no end of stream
			return true                                                   // never wait
		}
	}
	p.quiet = false
	err := p.raw.Read(p.peek)
	return err == nil && p.quiet
}
