package probing

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/networkio/webchecker/probing/pattern"
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
// ends (io.EOF), limit bytes were read, or reading fails. It returns what
// it read (at most limit bytes) and why it stopped; err is the read error
// other than io.EOF, with what was read before it, or ctx's error when
// ctx ended during a match.
//
// expect is matched after every read that returned data, and once more
// at EOF (so that an expression matching the empty reply accepts a server
// that closes without a word): "what was read so far" depends on how the
// server's bytes arrived, so "$" means the end of what arrived so far, not
// the end of the reply. See replyMatcher for what a server that trickles
// its reply costs.
func readReply(ctx context.Context, r io.Reader, expect *pattern.Regexp, limit int64) ([]byte, replyEnd, error) {
	return newReplyMatcher(expect, limit).read(ctx, r)
}

// replyMatcher matches a reply as it arrives. Matching after every read
// costs the length of what was read so far times the expression's program
// size, so a server that sends its reply a byte at a time would cost time
// quadratic in its length, up to the read limit and the probe's timeout: a
// hostile target could keep a probe worker (and a CPU) busy for the whole
// timeout. The bytes scanned by the matches before the last are therefore
// bounded by a budget, pattern.MaxWork / Size bytes (at least the read
// limit, since NewTarget holds Size × limit under pattern.MaxWork): once it
// is spent, the reply is matched only when the server closes or the limit
// is reached. All the matches of one reply thus take at most twice
// pattern.MaxWork steps, linear in the limit however the reply arrives,
// and each stops at the probe's deadline. A reply of a few kilobytes never
// gets near the budget.
type replyMatcher struct {
	expect *pattern.Regexp
	limit  int64
	// budget is what scanned may reach before matching stops until EOF
	// or the limit.
	budget, scanned int64
	// skipped is set when bytes arrived that were not matched (the budget
	// was spent).
	skipped bool
}

func newReplyMatcher(expect *pattern.Regexp, limit int64) *replyMatcher {
	return &replyMatcher{expect: expect, limit: limit, budget: max(pattern.MaxWork/expect.Size(), limit)}
}

// match matches reply, counting its length against the budget; final
// matches (at EOF or at the limit) are always made. It fails with ctx's
// error when ctx ends first.
func (m *replyMatcher) match(ctx context.Context, reply []byte, final bool) (bool, error) {
	if !final && m.scanned+int64(len(reply)) > m.budget {
		m.skipped = true
		return false, nil
	}
	m.scanned += int64(len(reply))
	return m.expect.MatchContext(ctx, reply)
}

func (m *replyMatcher) read(ctx context.Context, r io.Reader) ([]byte, replyEnd, error) {
	if m.limit <= 0 {
		return nil, replyLimit, nil
	}
	reply := make([]byte, 0, min(m.limit, 4<<10))
	empty := 0
	for int64(len(reply)) < m.limit {
		if len(reply) == cap(reply) {
			reply = slices.Grow(reply, len(reply)) // doubles: a few copies for a long reply
		}
		end := min(int64(cap(reply)), int64(len(reply)+replyChunk), m.limit)
		n, err := r.Read(reply[len(reply):end])
		reply = reply[:len(reply)+n]
		full := int64(len(reply)) >= m.limit
		if n > 0 {
			matched, matchErr := m.match(ctx, reply, full)
			if matchErr != nil {
				return reply, replyClosed, matchErr
			}
			if matched {
				return reply, replyMatched, nil
			}
		}
		switch {
		case closedByServer(err): // the end of the stream, or a reset: timing tells them apart
			if len(reply) == 0 || m.skipped {
				matched, matchErr := m.match(ctx, reply, true)
				if matchErr != nil {
					return reply, replyClosed, matchErr
				}
				if matched {
					return reply, replyMatched, nil
				}
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
