package probing

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/networkio/webchecker/probing/pattern"
	"github.com/networkio/webchecker/probing/probetest"
)

// The bound of a DNS response's text (DNSTextPerBodyByte): the worst
// responses a server can send, the largest message (64 KiB) full of
// records whose text is many times their wire size.

// escapedName is a 254-character name of bytes that each take 4 bytes of
// text (\001): 1,016 bytes of text, 2 bytes on the wire once compressed.
func escapedName(t testing.TB) dnsmessage.Name {
	label := strings.Repeat("\x01", 63)
	n, err := dnsmessage.NewName(label + "." + label + "." + label + "." + strings.Repeat("\x01", 61) + ".")
	require.NoError(t, err)
	return n
}

// worstResponse returns a response to q of about 64 KiB whose answer
// section holds as many records as fit, each made by body (owner name
// escapedName, compressed).
func worstResponse(t testing.TB, q dnsmessage.Question, typ dnsmessage.Type, body func(n dnsmessage.Name) dnsmessage.ResourceBody) []byte {
	name := escapedName(t)
	hdr := dnsmessage.ResourceHeader{Name: name, Type: typ, Class: dnsmessage.ClassINET, TTL: 300}
	build := func(records int) []byte {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, Response: true})
		b.EnableCompression()
		require.NoError(t, b.StartQuestions())
		require.NoError(t, b.Question(q))
		require.NoError(t, b.StartAnswers())
		for range records {
			require.NoError(t, addRecord(&b, hdr, body(name)))
		}
		msg, err := b.Finish()
		require.NoError(t, err)
		return msg
	}
	// As many records as fit in the 65,535 bytes of a TCP response: the
	// first holds the name, the others point to it.
	first, perRecord := len(build(1)), len(build(2))-len(build(1))
	msg := build(1 + (65535-first)/perRecord)
	require.LessOrEqual(t, len(msg), 65535)
	return msg
}

func addRecord(b *dnsmessage.Builder, hdr dnsmessage.ResourceHeader, body dnsmessage.ResourceBody) error {
	switch r := body.(type) {
	case *dnsmessage.CNAMEResource:
		return b.CNAMEResource(hdr, *r)
	case *dnsmessage.AResource:
		return b.AResource(hdr, *r)
	case *dnsmessage.TXTResource:
		return b.TXTResource(hdr, *r)
	}
	panic("unexpected body")
}

// worstResponses are the responses of the bound's tests and benchmarks.
func worstResponses(t testing.TB) map[string][]byte {
	q := dnsmessage.Question{Name: dnsmessage.MustNewName("worst.test."), Type: dnsmessage.TypeCNAME, Class: dnsmessage.ClassINET}
	txt := strings.Repeat("\x01", 255)
	return map[string][]byte{
		"CNAME records, names compressed": worstResponse(t, q, dnsmessage.TypeCNAME,
			func(n dnsmessage.Name) dnsmessage.ResourceBody { return &dnsmessage.CNAMEResource{CNAME: n} }),
		"A records, owners compressed": worstResponse(t, q, dnsmessage.TypeA,
			func(dnsmessage.Name) dnsmessage.ResourceBody { return &dnsmessage.AResource{A: [4]byte{192, 0, 2, 1}} }),
		"TXT records of escaped bytes": worstResponse(t, q, dnsmessage.TypeTXT,
			func(dnsmessage.Name) dnsmessage.ResourceBody {
				return &dnsmessage.TXTResource{TXT: []string{txt, txt, txt, txt, txt, txt, txt, txt}}
			}),
	}
}

func textSize(resp *dnsResponse) (records, bytes int) {
	for _, section := range [][]string{resp.answers, resp.authority, resp.additional} {
		records += len(section)
		for _, r := range section {
			bytes += len(r)
		}
	}
	return records, bytes
}

func TestParseResponseTextBound(t *testing.T) {
	t.Parallel()
	maxText := int(DefaultBodyLimit) * DNSTextPerBodyByte
	for name, msg := range worstResponses(t) {
		t.Run(name, func(t *testing.T) { // not parallel: the allocations are measured
			var q dnsmessage.Parser
			_, err := q.Start(msg)
			require.NoError(t, err)
			question, err := q.Question()
			require.NoError(t, err)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			resp, err := parseResponse(msg, 7, question, maxText)
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			records, bytes := textSize(resp)
			t.Logf("%d-byte message: %d records kept, %d bytes of text (bound %d), cut %v; %d bytes allocated",
				len(msg), records, bytes, maxText, resp.cut, after.TotalAlloc-before.TotalAlloc)
			assert.LessOrEqual(t, bytes, maxText, "the records' text is bounded")
			assert.True(t, resp.cut, "records were left out")
			assert.Positive(t, records, "the first records are kept")

			whole, err := parseResponse(msg, 7, question, 64<<20)
			require.NoError(t, err)
			wholeRecords, wholeBytes := textSize(whole)
			t.Logf("without the bound: %d records, %d bytes of text", wholeRecords, wholeBytes)
			assert.Equal(t, whole.answers[:len(resp.answers)], resp.answers, "the kept records are the first ones")
		})
	}
}

// BenchmarkParseWorstResponse measures the memory a worst response takes
// to parse, with the default bound and without: go test -run '^$' -bench
// ParseWorstResponse -benchmem ./probing/
func BenchmarkParseWorstResponse(b *testing.B) {
	for name, msg := range worstResponses(b) {
		for bound, maxText := range map[string]int{"bounded": int(DefaultBodyLimit) * DNSTextPerBodyByte, "unbounded": 64 << 20} {
			benchmarkParse(b, name+", "+bound, msg, maxText)
		}
	}
}

func benchmarkParse(b *testing.B, name string, msg []byte, maxText int) {
	{
		b.Run(name, func(b *testing.B) {
			var q dnsmessage.Parser
			_, _ = q.Start(msg)
			question, _ := q.Question()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseResponse(msg, 7, question, maxText); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// answerKeeper is a Judge that keeps the DNS answer it judged.
type answerKeeper struct{ dns *DNSAnswer }

func (k *answerKeeper) Judge(_ context.Context, a *Answer) (bool, string) {
	k.dns = a.DNS
	return true, ""
}
func (k *answerKeeper) Source() string  { return "answerKeeper" }
func (k *answerKeeper) NeedsBody() bool { return false }

// worstStub serves msg (with its ID set to the query's) to every TCP
// query, on loopback, until the test ends.
func worstStub(t *testing.T, msg []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	probetest.ServeConns(t, ln, 10*time.Second, func(c net.Conn) {
		var prefix [2]byte
		if _, err := io.ReadFull(c, prefix[:]); err != nil {
			return
		}
		query := make([]byte, binary.BigEndian.Uint16(prefix[:]))
		if _, err := io.ReadFull(c, query); err != nil {
			return
		}
		resp := append([]byte(nil), msg...)
		copy(resp[:2], query[:2]) // the query's ID
		_, _ = c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(resp))), resp...))
	})
	return ln.Addr().String()
}

// TestDNSProbeTextBound: a probe of a stub answering the worst responses
// gives its Judge (the dns variables of conditions) and AnswerMatch at
// most the bound's text, and an AnswerMismatch says records were left
// out.
func TestDNSProbeTextBound(t *testing.T) {
	maxText := int(DefaultBodyLimit) * DNSTextPerBodyByte
	prober := NewDNSProber(ProberOptions{})
	for name, msg := range worstResponses(t) {
		t.Run(name, func(t *testing.T) { // not parallel: the allocations are measured
			addr := worstStub(t, msg)
			keeper := &answerKeeper{}
			spec := TargetSpec{URL: "dns://" + addr, Timeout: 10 * time.Second, Judge: keeper,
				DNS: &DNSOptions{Name: "worst.test", Type: "CNAME", Transport: "tcp"}}
			target := mustTarget(t, spec)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res := prober.Probe(t.Context(), target)
			runtime.ReadMemStats(&after)
			require.True(t, res.Success, "%+v", res)
			require.NotNil(t, keeper.dns)
			bytes := 0
			for _, section := range [][]string{keeper.dns.Answers, keeper.dns.Authority, keeper.dns.Additional} {
				for _, r := range section {
					bytes += len(r)
				}
			}
			t.Logf("%d records, %d bytes of text for the Judge (bound %d); %d bytes allocated by the probe",
				len(keeper.dns.Answers), bytes, maxText, after.TotalAlloc-before.TotalAlloc)
			assert.LessOrEqual(t, bytes, maxText)

			spec.Judge, spec.DNS.AnswerMatch = nil, []*pattern.Regexp{pattern.MustCompile(`^nothing$`)}
			res = prober.Probe(t.Context(), mustTarget(t, spec))
			assert.Equal(t, ReasonAnswerMismatch, res.Reason, "%+v", res)
			assert.Contains(t, res.Message, "records beyond the text bound were left out")
		})
	}
}
