//go:build !unix

package probing

// idlePeeker has nothing to keep where sockets are not peeked at.
type idlePeeker struct{}

// idleUsable tells whether an idle connection can take a request: nothing
// is buffered. (Without a peek at the socket, a connection the server
// closed is found out by the request, which is then sent again when it
// can be: see http1Transport.)
func (c *http1Conn) idleUsable() bool { return c.br.Buffered() == 0 }
