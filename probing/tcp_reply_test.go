package probing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/pattern"
)

// chunkReader returns data in reads of the sizes of chunks (a size of 0
// is a read that returns nothing; the last size repeats), then io.EOF.
type chunkReader struct {
	data   []byte
	chunks []byte
	err    error // instead of io.EOF, when set
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	size := 1
	if len(r.chunks) > 0 {
		size = int(r.chunks[0])
		if len(r.chunks) > 1 {
			r.chunks = r.chunks[1:]
		}
	}
	n := copy(p[:min(len(p), size)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadReply(t *testing.T) {
	t.Parallel()
	failed := errors.New("connection reset")
	tests := map[string]struct {
		reader    *chunkReader
		expect    string
		max       int64
		wantReply string
		wantEnd   replyEnd
		wantErr   error
	}{
		"match in the first read": {reader: &chunkReader{data: []byte("220 ready\r\n"), chunks: []byte{64}}, expect: `^220`, max: 64,
			wantReply: "220 ready\r\n", wantEnd: replyMatched},
		"match across reads stops reading": {reader: &chunkReader{data: []byte("+PONG\r\nmore"), chunks: []byte{2, 3, 2}}, expect: `^\+PONG\r\n`, max: 64,
			wantReply: "+PONG\r\n", wantEnd: replyMatched},
		"no match before EOF": {reader: &chunkReader{data: []byte("-ERR\r\n"), chunks: []byte{3}}, expect: `^\+PONG`, max: 64,
			wantReply: "-ERR\r\n", wantEnd: replyClosed},
		"no match within the limit": {reader: &chunkReader{data: []byte("hello world"), chunks: []byte{64}}, expect: `world`, max: 5,
			wantReply: "hello", wantEnd: replyLimit},
		"a match at the limit": {reader: &chunkReader{data: []byte("hello world"), chunks: []byte{64}}, expect: `^hello$`, max: 5,
			wantReply: "hello", wantEnd: replyMatched},
		"an empty reply matches an expression of the empty string": {reader: &chunkReader{}, expect: `^$`, max: 5,
			wantReply: "", wantEnd: replyMatched},
		"an empty reply does not match another": {reader: &chunkReader{}, expect: `x`, max: 5,
			wantReply: "", wantEnd: replyClosed},
		"a read error": {reader: &chunkReader{data: []byte("22"), err: failed}, expect: `^220`, max: 64,
			wantReply: "22", wantEnd: replyClosed, wantErr: failed},
		"a reader that makes no progress": {reader: &chunkReader{data: []byte("220"), chunks: []byte{0}}, expect: `^220`, max: 64,
			wantReply: "", wantEnd: replyClosed, wantErr: io.ErrNoProgress},
		"a long reply grows the buffer": {reader: &chunkReader{data: append(bytes.Repeat([]byte("x"), 100<<10), "END"...), chunks: []byte{255}},
			expect: `END`, max: 1 << 20, wantReply: string(bytes.Repeat([]byte("x"), 100<<10)) + "END", wantEnd: replyMatched},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reply, end, err := readReply(context.Background(), tc.reader, pattern.MustCompile(tc.expect), tc.max)
			require.ErrorIs(t, err, tc.wantErr)
			if tc.wantErr == nil {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.wantReply, string(reply))
			assert.Equal(t, tc.wantEnd, end)
		})
	}
}

func FuzzReadReply(f *testing.F) {
	f.Add([]byte("220 ready\r\n"), []byte{1, 4, 64}, `^220 `, int64(64))
	f.Add([]byte("+PONG\r\n"), []byte{3}, `^\+PONG\r\n$`, int64(16))
	f.Add([]byte("-ERR unknown\r\n"), []byte{0, 2, 0, 5}, `^\+PONG`, int64(1024))
	f.Add([]byte("SSH-2.0-OpenSSH_9.6\r\n"), []byte{255}, `^SSH-2\.0-`, int64(4))
	f.Add([]byte(""), []byte{}, `^$`, int64(1))
	f.Add([]byte("\xff\xfe\x00binary"), []byte{2}, `(?s).*binary`, int64(1<<20))
	f.Fuzz(func(t *testing.T, data, chunks []byte, expr string, maxBytes int64) {
		re, err := pattern.Compile(expr)
		if err != nil || len(expr) > MaxBodyMatchPattern || maxBytes < 1 || maxBytes > MaxBodyMatchBytes || pattern.CheckWork(re, maxBytes) != nil {
			t.Skip()
		}
		reply, end, err := readReply(context.Background(), &chunkReader{data: data, chunks: chunks}, re, maxBytes)
		if err != nil && !errors.Is(err, io.ErrNoProgress) {
			t.Fatalf("unexpected error %v", err)
		}
		if int64(len(reply)) > maxBytes || !bytes.HasPrefix(data, reply) {
			t.Fatalf("reply %q is not a prefix of %q of at most %d bytes", reply, data, maxBytes)
		}
		switch {
		case err != nil:
			if end != replyClosed || len(reply) == len(data) {
				t.Fatalf("no progress, yet end %v after %d of %d bytes", end, len(reply), len(data))
			}
		case end == replyMatched:
			if !re.Match(reply) {
				t.Fatalf("matched, but %q does not match %q", expr, reply)
			}
		case end == replyClosed:
			if !bytes.Equal(reply, data) || re.Match(reply) {
				t.Fatalf("closed after %q of %q (matches: %v)", reply, data, re.Match(reply))
			}
		case end == replyLimit:
			if int64(len(reply)) != maxBytes || re.Match(reply) {
				t.Fatalf("limit after %d of %d bytes (matches: %v)", len(reply), maxBytes, re.Match(reply))
			}
		default:
			t.Fatalf("unknown end %v", end)
		}
	})
}

// TestReplyMatcherBoundsTheWorkOfATrickle: a server that sends its reply
// a byte at a time makes the matcher scan at most its budget (not the
// square of the reply), and a match that comes only at the end is still
// found when the server closes or the limit is reached.
func TestReplyMatcherBoundsTheWorkOfATrickle(t *testing.T) {
	const limit = 64 << 10
	data := bytes.Repeat([]byte("a"), limit-1)
	for name, tc := range map[string]struct {
		data    []byte
		expect  string
		wantEnd replyEnd
	}{
		"no match, EOF":              {data, "b", replyClosed},
		"match in the last byte":     {append(bytes.Clone(data), 'b'), "b$", replyMatched},
		"match at EOF, below max":    {append(bytes.Clone(data[:limit/2]), 'b'), "ab$", replyMatched},
		"no match, the limit":        {append(bytes.Clone(data), 'a', 'a'), "b", replyLimit},
		"match early, no trickle":    {[]byte("220 ready"), "^220 ", replyMatched},
		"empty reply matches at EOF": {nil, "^$", replyMatched},
	} {
		t.Run(name, func(t *testing.T) {
			re := pattern.MustCompile(tc.expect)
			m := newReplyMatcher(re, limit)
			reply, end, err := m.read(context.Background(), &chunkReader{data: tc.data, chunks: []byte{1}})
			require.NoError(t, err)
			assert.Equal(t, tc.wantEnd, end)
			assert.LessOrEqual(t, len(reply), limit)
			// The budget, plus the one final match at EOF or at the limit:
			// at most twice pattern.MaxWork steps.
			assert.LessOrEqual(t, m.scanned, m.budget+limit, "bytes scanned")
			assert.LessOrEqual(t, m.scanned*re.Size(), int64(2*pattern.MaxWork), "steps")
		})
	}
	// Without the budget the trickle above would scan limit²/2 bytes.
	assert.Less(t, int64(2*pattern.MaxWork), int64(limit)*limit/2*pattern.MustCompile("b").Size())
}

// TestReadReplyStopsAtTheDeadline: a match of a large program on a long
// reply stops when the probe's context ends, with its error.
func TestReadReplyStopsAtTheDeadline(t *testing.T) {
	re := pattern.MustCompile("[ab]{997}[ab]{999}c") // 1999 instructions
	data := bytes.Repeat([]byte("a"), 1<<20)         // seconds of matching
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	// A matcher built past Validate (which refuses this limit) shows the
	// deadline alone stops it.
	m := &replyMatcher{expect: re, limit: 1 << 20, budget: 1 << 30}
	_, _, err := m.read(ctx, &chunkReader{data: data, chunks: []byte{255}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second)
}
