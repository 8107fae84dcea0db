//go:build unix

package probing

import "syscall"

// idleUsable tells whether an idle connection can take a request: nothing
// is buffered, and the server has neither closed it nor sent anything
// since (a peek at the socket that does not wait). http.Transport learns
// the same from the read it keeps pending on every idle connection.
func (c *http1Conn) idleUsable() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	sc, ok := c.conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	quiet := false
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		quiet = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK // no byte, no end of stream
		return true                                                   // never wait
	})
	return err == nil && quiet
}
