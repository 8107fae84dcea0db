package probing

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
)

// replyEnd is why readReply stopped reading.
type replyEnd int

const (
	// replyMatched: the expected regular expression matched.
	replyMatched replyEnd = iota
	// replyClosed: the server closed the connection (EOF) first.
	replyClosed
	// replyLimit: the read limit was reached first.
	replyLimit
)

// replyChunk is how much readReply asks for at most in one read.
const replyChunk = 32 << 10

// maxEmptyReads is how many reads in a row may return nothing before
// readReply gives up on a reader (io.ErrNoProgress).
const maxEmptyReads = 100

// readReply reads from r until expect matches everything read so far, r
// ends (io.EOF), max bytes were read, or reading fails. It returns what
// it read (at most max bytes) and why it stopped; err is the read error
// other than io.EOF, with what was read before it.
//
// expect is matched after every read that returned data, and once more
// at EOF (so that an expression matching the empty reply accepts a server
// that closes without a word): "what was read so far" depends on how the
// server's bytes arrived, so "$" means the end of what arrived so far, not
// the end of the reply. A server that trickles its reply byte by byte
// makes readReply match again and again, bounded by max and by r's
// deadline.
func readReply(r io.Reader, expect *regexp.Regexp, max int64) ([]byte, replyEnd, error) {
	if max <= 0 {
		return nil, replyLimit, nil
	}
	reply := make([]byte, 0, min(max, 4<<10))
	empty := 0
	for int64(len(reply)) < max {
		if len(reply) == cap(reply) {
			reply = slices.Grow(reply, len(reply)) // doubles: a few copies for a long reply
		}
		end := min(int64(cap(reply)), int64(len(reply)+replyChunk), max)
		n, err := r.Read(reply[len(reply):end])
		reply = reply[:len(reply)+n]
		switch {
		case n > 0 && expect.Match(reply):
			return reply, replyMatched, nil
		case errors.Is(err, io.EOF):
			if len(reply) == 0 && expect.Match(nil) {
				return reply, replyMatched, nil
			}
			return reply, replyClosed, nil
		case err != nil:
			return reply, replyClosed, err
		case n == 0:
			if empty++; empty >= maxEmptyReads {
				return reply, replyClosed, io.ErrNoProgress
			}
			continue
		}
		empty = 0
	}
	return reply, replyLimit, nil
}

// unexpectedReplyMessage says why the reply of a probe of url did not
// match o.Expect. It quotes the expression, never the reply: it may hold
// anything, secrets included, and change at every probe.
func unexpectedReplyMessage(url string, o *TCPOptions, end replyEnd) string {
	prefix := "read " + strconv.Quote(url) + ": "
	if end == replyLimit {
		return prefix + fmt.Sprintf("reply does not match %q within its first %d bytes", o.Expect.String(), o.MaxBytes)
	}
	return prefix + fmt.Sprintf("reply does not match %q: the server closed the connection", o.Expect.String())
}
