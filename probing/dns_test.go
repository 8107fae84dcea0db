package probing_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/probing/pattern"
	"github.com/networkio/webchecker/probing/probetest"
)

// The dns probe's tests: a probetest DNS server is both the resolver of
// server names (ns.test) and the server probed; raw UDP and TCP servers
// on loopback answer what no real server would.

var transports = []string{"udp", "tcp"}

// newZone starts the DNS server the probes query, with records of every
// type the formatter knows.
func newZone(t *testing.T) *probetest.DNSServer {
	t.Helper()
	many := make([]net.IP, 200) // more than 1232 bytes of answers
	for i := range many {
		many[i] = net.IPv4(127, 0, 1, byte(i))
	}
	srv := probetest.NewTestDNSServer(t, map[string][]net.IP{
		"a.test":    {net.IPv4(127, 0, 0, 1)},
		"v6.test":   {net.IPv6loopback},
		"ns.test":   {net.IPv4(127, 0, 0, 1)},
		"many.test": many,
	})
	name := dnsmessage.MustNewName
	rr := func(owner string, body dnsmessage.ResourceBody) dnsmessage.Resource {
		return dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: name(owner), TTL: 60}, Body: body}
	}
	require.NoError(t, srv.SetResources([]dnsmessage.Resource{
		rr("www.test.", &dnsmessage.CNAMEResource{CNAME: name("a.test.")}),
		rr("txt.test.", &dnsmessage.TXTResource{TXT: []string{"v=spf1 -all", `say "hi"\`, "\x01"}}),
		rr("mx.test.", &dnsmessage.MXResource{Pref: 10, MX: name("mail.test.")}),
		rr("zone.test.", &dnsmessage.NSResource{NS: name("ns1.test.")}),
		rr("zone.test.", &dnsmessage.SOAResource{
			NS: name("ns1.test."), MBox: name("hostmaster.zone.test."),
			Serial: 2024010101, Refresh: 7200, Retry: 3600, Expire: 1209600, MinTTL: 300,
		}),
		rr("zone.test.", &dnsmessage.UnknownResource{Type: 257, Data: []byte("\x00\x05issueca.test")}),
		rr("1.0.0.127.in-addr.arpa.", &dnsmessage.PTRResource{PTR: name("a.test.")}),
		rr("_dns._udp.zone.test.", &dnsmessage.SRVResource{Priority: 10, Weight: 5, Port: 53, Target: name("ns1.test.")}),
	}))
	require.NoError(t, srv.SetRcode("broken.test", dnsmessage.RCodeServerFailure))
	require.NoError(t, srv.SetRcode("refused.test", dnsmessage.RCodeRefused))
	return srv
}

// newDNSProber returns a KindProber whose resolver asks resolver.
func newDNSProber(t *testing.T, resolver *probetest.DNSServer, opts probing.ProberOptions) *probing.KindProber {
	t.Helper()
	opts.DNSServer = resolver.Addr()
	p := probing.NewProber(opts)
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// dnsTarget is a dns target of server (host:port) asking o.
func dnsTarget(server string, o probing.DNSOptions) probing.TargetSpec {
	return probing.TargetSpec{URL: "dns://" + server, Timeout: relaxedTimeout, DNS: &o}
}

// matches compiles regular expressions.
func matches(patterns ...string) []*pattern.Regexp {
	res := make([]*pattern.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = pattern.MustCompile(p)
	}
	return res
}

// dnsJudge records the Answer it judges and returns ok.
type dnsJudge struct {
	ok bool
	mu sync.Mutex
	a  *probing.Answer
}

func (j *dnsJudge) Judge(_ context.Context, a *probing.Answer) (bool, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.a = a
	return j.ok, "dns.answers does not hold"
}

func (j *dnsJudge) Source() string  { return "dnsJudge" }
func (j *dnsJudge) NeedsBody() bool { return false }

func (j *dnsJudge) answer() *probing.Answer {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.a
}

// dnsAnswerCase is a query to the zone and the outcome it has: success
// unless wantReason is set.
type dnsAnswerCase struct {
	server      string // default zone.Addr()
	opts        probing.DNSOptions
	wantReason  probing.Reason
	wantMessage string // exact after "dns query ... to ...: ", when set
}

// dnsAnswerCases are the queries of TestDNSProberAnswers; port is the zone's.
func dnsAnswerCases(port string) map[string]dnsAnswerCase {
	return map[string]dnsAnswerCase{
		"A": {opts: probing.DNSOptions{Name: "a.test", Type: "A", AnswerMatch: matches(`^a\.test\. \d+ IN A 127\.0\.0\.1$`)}},
		"AAAA": {
			opts: probing.DNSOptions{Name: "v6.test.", Type: "AAAA", AnswerMatch: matches(`^v6\.test\. \d+ IN AAAA ::1$`)},
		},
		"CNAME": {
			opts: probing.DNSOptions{Name: "www.test", Type: "CNAME", AnswerMatch: matches(`^www\.test\. 60 IN CNAME a\.test\.$`)},
		},
		"A through a CNAME": {
			opts: probing.DNSOptions{Name: "www.test", Type: "A", AnswerMatch: matches(`IN CNAME a\.test\.$`, `^a\.test\. \d+ IN A 127\.0\.0\.1$`)},
		},
		"TXT": {
			opts: probing.DNSOptions{Name: "txt.test", Type: "TXT", AnswerMatch: matches(`IN TXT "v=spf1 -all" `)},
		},
		"server by name": {
			server: "ns.test:" + port,
			opts:   probing.DNSOptions{Name: "a.test", Type: "A", AnswerMatch: matches(`127\.0\.0\.1$`)},
		},
		"NXDOMAIN rejected by default": {
			opts:       probing.DNSOptions{Name: "nope.test", Type: "A"},
			wantReason: probing.ReasonUnexpectedRcode, wantMessage: "rcode NXDOMAIN (expected NOERROR)",
		},
		"NXDOMAIN accepted": {opts: probing.DNSOptions{Name: "nope.test", Type: "A", Rcodes: []string{"NOERROR", "NXDOMAIN"}}},
		"NOERROR rejected": {
			opts:       probing.DNSOptions{Name: "a.test", Type: "A", Rcodes: []string{"NXDOMAIN"}},
			wantReason: probing.ReasonUnexpectedRcode, wantMessage: "rcode NOERROR (expected NXDOMAIN)",
		},
		"SERVFAIL": {
			opts:       probing.DNSOptions{Name: "broken.test", Type: "A", Rcodes: []string{"NOERROR", "NXDOMAIN"}},
			wantReason: probing.ReasonUnexpectedRcode, wantMessage: "rcode SERVFAIL (expected one of NOERROR, NXDOMAIN)",
		},
		"REFUSED accepted": {opts: probing.DNSOptions{Name: "refused.test", Type: "TXT", Rcodes: []string{"REFUSED"}}},
		"answer mismatch": {
			opts:       probing.DNSOptions{Name: "a.test", Type: "A", AnswerMatch: matches(`IN A`, `127\.0\.0\.9`)},
			wantReason: probing.ReasonAnswerMismatch, wantMessage: `no answer record matches "127\\.0\\.0\\.9"`,
		},
		"empty answer": {
			opts:       probing.DNSOptions{Name: "v6.test", Type: "A", AnswerMatch: matches(`.`)},
			wantReason: probing.ReasonAnswerMismatch, wantMessage: `no answer record matches "." (the answer section is empty)`,
		},
		"accepted NXDOMAIN still needs its answer match": {
			opts:       probing.DNSOptions{Name: "nope.test", Type: "A", Rcodes: []string{"NXDOMAIN"}, AnswerMatch: matches(`.`)},
			wantReason: probing.ReasonAnswerMismatch,
		},
		"server name that does not resolve": {
			server:     "nowhere.test:" + port,
			opts:       probing.DNSOptions{Name: "a.test", Type: "A"},
			wantReason: probing.ReasonDNSFailed,
		},
	}
}

func TestDNSProberAnswers(t *testing.T) {
	t.Parallel()
	zone := newZone(t)
	prober := newDNSProber(t, zone, probing.ProberOptions{})
	_, port, _ := net.SplitHostPort(zone.Addr())

	tests := dnsAnswerCases(port)
	for name, tc := range tests {
		for _, transport := range transports {
			t.Run(name+" over "+transport, func(t *testing.T) {
				t.Parallel()
				server := tc.server
				if server == "" {
					server = zone.Addr()
				}
				opts := tc.opts
				opts.Transport = transport
				res := probe(t.Context(), prober, dnsTarget(server, opts))
				assert.Positive(t, res.Duration)
				if tc.wantReason == "" {
					assert.True(t, res.Success, "%+v", res)
					assert.Equal(t, probing.ReasonSucceeded, res.Reason)
					assert.Equal(t, probing.ReadyMessage, res.Message)
					return
				}
				assert.False(t, res.Success)
				assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
				prefix := `dns query "` + strings.TrimSuffix(opts.Name, ".") + `." ` + opts.Type + ` to "dns://` + server + `": `
				assert.True(t, strings.HasPrefix(res.Message, prefix), "%q does not start with %q", res.Message, prefix)
				if tc.wantMessage != "" {
					assert.Equal(t, prefix+tc.wantMessage, res.Message)
				}
				again := probe(t.Context(), prober, dnsTarget(server, opts))
				assert.True(t, res.SameOutcome(again), "stable message:\n%s\n%s", res.Message, again.Message)
			})
		}
	}
}

// The Judge reads every record in zone-file form, and the rcode.
func TestDNSProberJudge(t *testing.T) {
	t.Parallel()
	zone := newZone(t)
	prober := newDNSProber(t, zone, probing.ProberOptions{})

	tests := map[string]struct {
		opts      probing.DNSOptions
		wantRcode string
		want      []string
	}{
		"A":     {opts: probing.DNSOptions{Name: "a.test", Type: "A"}, want: []string{"a.test. 1 IN A 127.0.0.1"}},
		"AAAA":  {opts: probing.DNSOptions{Name: "v6.test", Type: "AAAA"}, want: []string{"v6.test. 1 IN AAAA ::1"}},
		"CNAME": {opts: probing.DNSOptions{Name: "WWW.test", Type: "A"}, want: []string{"WWW.test. 60 IN CNAME a.test.", "a.test. 1 IN A 127.0.0.1"}},
		"TXT": {
			opts: probing.DNSOptions{Name: "txt.test", Type: "TXT"},
			want: []string{`txt.test. 60 IN TXT "v=spf1 -all" "say \"hi\"\\" "\001"`},
		},
		"MX": {opts: probing.DNSOptions{Name: "mx.test", Type: "MX"}, want: []string{"mx.test. 60 IN MX 10 mail.test."}},
		"NS": {opts: probing.DNSOptions{Name: "zone.test", Type: "NS"}, want: []string{"zone.test. 60 IN NS ns1.test."}},
		"SOA": {
			opts: probing.DNSOptions{Name: "zone.test", Type: "SOA"},
			want: []string{"zone.test. 60 IN SOA ns1.test. hostmaster.zone.test. 2024010101 7200 3600 1209600 300"},
		},
		"CAA": {opts: probing.DNSOptions{Name: "zone.test", Type: "CAA"}, want: []string{`zone.test. 60 IN CAA 0 issue "ca.test"`}},
		"PTR": {
			opts: probing.DNSOptions{Name: "1.0.0.127.in-addr.arpa", Type: "PTR"},
			want: []string{"1.0.0.127.in-addr.arpa. 60 IN PTR a.test."},
		},
		"SRV": {
			opts: probing.DNSOptions{Name: "_dns._udp.zone.test", Type: "SRV"},
			want: []string{"_dns._udp.zone.test. 60 IN SRV 10 5 53 ns1.test."},
		},
		"accepted NXDOMAIN": {opts: probing.DNSOptions{Name: "nope.test", Type: "A", Rcodes: []string{"NXDOMAIN"}}, wantRcode: "NXDOMAIN"},
	}
	for name, tc := range tests {
		for _, transport := range transports {
			t.Run(name+" over "+transport, func(t *testing.T) {
				t.Parallel()
				judge := &dnsJudge{ok: true}
				target := dnsTarget(zone.Addr(), tc.opts)
				target.DNS.Transport, target.Judge = transport, judge
				res := probe(t.Context(), prober, target)
				require.True(t, res.Success, "%+v", res)
				a := judge.answer()
				require.NotNil(t, a)
				assert.Equal(t, probing.KindDNS, a.Kind)
				assert.Positive(t, a.Latency)
				assert.LessOrEqual(t, a.Latency, res.Duration)
				assert.Nil(t, a.HTTP)
				require.NotNil(t, a.DNS)
				assert.Equal(t, cmp.Or(tc.wantRcode, "NOERROR"), a.DNS.Rcode)
				assert.Equal(t, tc.want, a.DNS.Answers)
				assert.Empty(t, a.DNS.Authority)
				assert.Empty(t, a.DNS.Additional, "the OPT record is left out")
			})
		}
	}

	t.Run("a false judgement", func(t *testing.T) {
		t.Parallel()
		target := dnsTarget(zone.Addr(), probing.DNSOptions{Name: "a.test", Type: "A", Transport: "udp"})
		target.Judge = &dnsJudge{ok: false}
		res := probe(t.Context(), prober, target)
		assert.False(t, res.Success)
		assert.Equal(t, probing.ReasonConditionFailed, res.Reason)
		assert.Equal(t, "dns.answers does not hold", res.Message)
	})

	t.Run("no judgement after a failed check", func(t *testing.T) {
		t.Parallel()
		judge := &dnsJudge{ok: true}
		target := dnsTarget(zone.Addr(), probing.DNSOptions{Name: "nope.test", Type: "A", Transport: "udp"})
		target.Judge = judge
		res := probe(t.Context(), prober, target)
		assert.Equal(t, probing.ReasonUnexpectedRcode, res.Reason)
		assert.Nil(t, judge.answer())
	})
}

// A UDP response truncated to fit 1232 bytes is judged as it is; over TCP
// the whole answer comes.
func TestDNSProberTruncated(t *testing.T) {
	t.Parallel()
	zone := newZone(t)
	prober := newDNSProber(t, zone, probing.ProberOptions{})
	for transport, wantAnswers := range map[string]int{"udp": 0, "tcp": 200} {
		judge := &dnsJudge{ok: true}
		target := dnsTarget(zone.Addr(), probing.DNSOptions{Name: "many.test", Type: "A", Transport: transport})
		target.Judge = judge
		res := probe(t.Context(), prober, target)
		require.True(t, res.Success, "%s: %+v", transport, res)
		assert.Len(t, judge.answer().DNS.Answers, wantAnswers, transport)
	}
}

// rawDNS is a loopback DNS server that answers what reply returns for
// each query: any number of messages, raw. It counts the queries.
type rawDNS struct {
	addr    string
	queries atomic.Int64
}

// startRawUDP serves reply on a loopback UDP socket until the test ends.
func startRawUDP(t *testing.T, reply func(query []byte) [][]byte) *rawDNS {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &rawDNS{addr: conn.LocalAddr().String()}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			s.queries.Add(1)
			for _, msg := range reply(append([]byte(nil), buf[:n]...)) {
				_, _ = conn.WriteTo(msg, from)
			}
		}
	})
	t.Cleanup(func() {
		_ = conn.Close()
		wg.Wait()
	})
	return s
}

// startRawTCP serves reply on a loopback TCP listener until the test
// ends: it reads one length-prefixed query and writes the messages of
// reply as they are (with their prefixes, or not). After a nil reply it
// closes the connection; after an empty one it waits for the client to.
func startRawTCP(t *testing.T, reply func(query []byte) [][]byte) *rawDNS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &rawDNS{addr: ln.Addr().String()}
	serveRaw(t, ln, func(c net.Conn) {
		var prefix [2]byte
		if _, err := io.ReadFull(c, prefix[:]); err != nil {
			return
		}
		query := make([]byte, binary.BigEndian.Uint16(prefix[:]))
		if _, err := io.ReadFull(c, query); err != nil {
			return
		}
		s.queries.Add(1)
		msgs := reply(query)
		for _, msg := range msgs {
			_, _ = c.Write(msg)
		}
		if msgs != nil && len(msgs) == 0 {
			_, _ = io.Copy(io.Discard, c)
		}
	})
	return s
}

// respond returns the response to query with its answer section holding
// an A record of 127.0.0.1, after edit changes it.
func respond(t *testing.T, query []byte, edit func(m *dnsmessage.Message)) []byte {
	var m dnsmessage.Message
	if err := m.Unpack(query); err != nil {
		t.Errorf("unpack query: %v", err)
		return nil
	}
	m.Response, m.Additionals = true, nil
	if len(m.Questions) == 1 {
		m.Answers = []dnsmessage.Resource{{
			Header: dnsmessage.ResourceHeader{Name: m.Questions[0].Name, Class: dnsmessage.ClassINET, TTL: 5},
			Body:   &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}},
		}}
	}
	if edit != nil {
		edit(&m)
	}
	msg, err := m.Pack()
	if err != nil {
		t.Errorf("pack response: %v", err)
	}
	return msg
}

// withPrefix puts a TCP length prefix before msg.
func withPrefix(msg []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...)
}

// wrongID gives a response another ID than its query's.
func wrongID(m *dnsmessage.Message) { m.ID++ }

// rawDNSCase is what a raw server replies to the query of the probe, over
// transport, and the outcome: success unless wantReason is set.
type rawDNSCase struct {
	transport   string
	reply       func(t *testing.T, query []byte) [][]byte
	wantReason  probing.Reason
	wantMessage string // after the prefix
}

// malformedUDPCases are the UDP replies of TestDNSProberMalformedResponses.
func malformedUDPCases() map[string]rawDNSCase {
	return map[string]rawDNSCase{
		"UDP garbage": {
			transport:  "udp",
			reply:      func(*testing.T, []byte) [][]byte { return [][]byte{[]byte("garbage")} },
			wantReason: probing.ReasonConnectionFailed, wantMessage: "malformed response: unpacking header: answers: insufficient data for base length type",
		},
		"UDP, the query's ID then garbage": {
			transport: "udp",
			reply: func(_ *testing.T, q []byte) [][]byte {
				return [][]byte{append(q[:2:2], 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 0xff, 0xff)}
			},
			wantReason: probing.ReasonConnectionFailed,
		},
		"UDP, not a response": {
			transport: "udp",
			reply: func(t *testing.T, q []byte) [][]byte {
				return [][]byte{respond(t, q, func(m *dnsmessage.Message) { m.Response = false })}
			},
			wantReason: probing.ReasonConnectionFailed, wantMessage: "malformed response: not a response",
		},
		"UDP, another question": {
			transport: "udp",
			reply: func(t *testing.T, q []byte) [][]byte {
				return [][]byte{respond(t, q, func(m *dnsmessage.Message) { m.Questions[0].Type = dnsmessage.TypeAAAA })}
			},
			wantReason: probing.ReasonConnectionFailed, wantMessage: "malformed response: the question is not the query's",
		},
		"UDP, a wrong ID, then the response": {
			transport: "udp",
			reply: func(t *testing.T, q []byte) [][]byte {
				return [][]byte{respond(t, q, wrongID), respond(t, q, nil)}
			},
		},
		"UDP, a wrong ID, then nothing": {
			transport: "udp",
			reply: func(t *testing.T, q []byte) [][]byte {
				return [][]byte{respond(t, q, wrongID)}
			},
			wantReason: probing.ReasonTimeout, wantMessage: "timeout after 500ms",
		},
	}
}

// malformedTCPCases are the TCP replies of TestDNSProberMalformedResponses.
func malformedTCPCases() map[string]rawDNSCase {
	return map[string]rawDNSCase{
		"TCP, a wrong ID": {
			transport: "tcp",
			reply: func(t *testing.T, q []byte) [][]byte {
				return [][]byte{withPrefix(respond(t, q, wrongID)), withPrefix(respond(t, q, nil))}
			},
			wantReason: probing.ReasonConnectionFailed, wantMessage: "malformed response: its ID is not the query's",
		},
		"TCP, the response": {
			transport: "tcp",
			reply:     func(t *testing.T, q []byte) [][]byte { return [][]byte{withPrefix(respond(t, q, nil))} },
		},
		"TCP, the response cut short": {
			transport: "tcp",
			reply: func(t *testing.T, q []byte) [][]byte {
				msg := withPrefix(respond(t, q, nil))
				return [][]byte{msg[:len(msg)-1]}
			},
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: "malformed response: the server closed the connection in the middle of the response",
		},
		"TCP, closed without a response": {
			transport:   "tcp",
			reply:       func(*testing.T, []byte) [][]byte { return nil },
			wantReason:  probing.ReasonConnectionFailed,
			wantMessage: "the server closed the connection without responding",
		},
		"TCP, nothing": {
			transport:  "tcp",
			reply:      func(*testing.T, []byte) [][]byte { return [][]byte{} },
			wantReason: probing.ReasonTimeout, wantMessage: "timeout after 500ms",
		},
		"TCP, a record with 3 bytes of address": {
			transport: "tcp",
			reply: func(t *testing.T, q []byte) [][]byte {
				msg := respond(t, q, nil)
				msg = append(msg[:len(msg)-6], 0, 3, 127, 0, 1) // rdlength 3
				return [][]byte{withPrefix(msg)}
			},
			wantReason: probing.ReasonConnectionFailed, wantMessage: "malformed response: answer section: record 1 (A): 3 bytes of data instead of 4",
		},
	}
}

func TestDNSProberMalformedResponses(t *testing.T) {
	t.Parallel()
	resolver := newDNS(t)
	prober := newDNSProber(t, resolver, probing.ProberOptions{})

	tests := malformedUDPCases()
	for name, tc := range malformedTCPCases() {
		tests[name] = tc
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reply := func(q []byte) [][]byte { return tc.reply(t, q) }
			server := startRawUDP(t, reply)
			if tc.transport == "tcp" {
				server = startRawTCP(t, reply)
			}
			target := dnsTarget(server.addr, probing.DNSOptions{Name: "x.test", Type: "A", Transport: tc.transport})
			target.Timeout = 500 * time.Millisecond
			res := probe(t.Context(), prober, target)
			assert.EqualValues(t, 1, server.queries.Load())
			if tc.wantReason == "" {
				assert.True(t, res.Success, "%+v", res)
				return
			}
			assert.Equal(t, tc.wantReason, res.Reason, "%+v", res)
			assert.Contains(t, res.Message, `dns query "x.test." A to "dns://`+server.addr+`": `)
			if tc.wantMessage != "" {
				assert.True(t, strings.HasSuffix(res.Message, ": "+tc.wantMessage), "%q does not end with %q", res.Message, tc.wantMessage)
			} else {
				assert.Contains(t, res.Message, "malformed response")
			}
			assert.Less(t, res.Duration, target.Timeout+slack)
		})
	}
}

// silentUDP returns the address of a loopback UDP socket that reads
// queries and never answers; received, when set, is called for each.
func silentUDP(t *testing.T, received func()) string {
	t.Helper()
	s := startRawUDP(t, func([]byte) [][]byte {
		if received != nil {
			received()
		}
		return nil
	})
	return s.addr
}

func TestDNSProberTimeout(t *testing.T) {
	t.Parallel()
	prober := newDNSProber(t, newDNS(t), probing.ProberOptions{})
	server := silentUDP(t, nil)
	target := dnsTarget(server, probing.DNSOptions{Name: "a.test", Type: "A", Transport: "udp"})
	target.Timeout = 300 * time.Millisecond

	res := probe(t.Context(), prober, target)
	assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
	assert.Equal(t, `dns query "a.test." A to "dns://`+server+`": timeout after 300ms`, res.Message)
	assert.GreaterOrEqual(t, res.Duration, target.Timeout)
	assert.Less(t, res.Duration, target.Timeout+slack)
}

func TestDNSProberCancelled(t *testing.T) {
	t.Parallel()
	prober := newDNSProber(t, newDNS(t), probing.ProberOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	server := silentUDP(t, cancel) // the caller gives up once the query is out

	target := dnsTarget(server, probing.DNSOptions{Name: "a.test", Type: "A", Transport: "udp"})
	res := probe(ctx, prober, target)
	assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
	assert.Equal(t, `dns query "a.test." A to "dns://`+server+`": probe cancelled: context canceled`, res.Message)
	assert.Less(t, res.Duration, relaxedTimeout)

	res = probe(ctx, prober, target) // cancelled before it starts
	assert.Equal(t, probing.ReasonTimeout, res.Reason, "%+v", res)
	assert.Contains(t, res.Message, "probe cancelled: context canceled")
}

// closedUDPPort returns a loopback UDP address nothing listens on.
func closedUDPPort(t *testing.T) string {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := conn.LocalAddr().String()
	require.NoError(t, conn.Close())
	return addr
}

func TestDNSProberConnectionRefused(t *testing.T) {
	t.Parallel()
	prober := newDNSProber(t, newDNS(t), probing.ProberOptions{})
	for transport, server := range map[string]string{"tcp": closedPort(t), "udp": closedUDPPort(t)} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			target := dnsTarget(server, probing.DNSOptions{Name: "a.test", Type: "A", Transport: transport})
			res := probe(t.Context(), prober, target)
			assert.Equal(t, probing.ReasonConnectionFailed, res.Reason, "%+v", res)
			assert.True(t, strings.HasPrefix(res.Message, `dns query "a.test." A to "dns://`+server+`": `), res.Message)
			assert.Contains(t, res.Message, "connection refused")
			assert.NotRegexp(t, `127\.0\.0\.1:\d+->`, res.Message, "no local address")
			again := probe(t.Context(), prober, target)
			assert.True(t, res.SameOutcome(again), "stable message:\n%s\n%s", res.Message, again.Message)
		})
	}
}

// The egress policy judges the server's address, over UDP as over TCP,
// by address and by name: a denied server never gets a query.
func TestDNSProberEgressDenied(t *testing.T) {
	t.Parallel()
	resolver := newZone(t) // knows ns.test as 127.0.0.1
	zone := newZone(t)
	_, port, _ := net.SplitHostPort(zone.Addr())
	prober := newDNSProber(t, resolver, probing.ProberOptions{Egress: egress.NewPolicy(egress.Options{
		Deny:  []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.3/32")},
	})})

	for _, server := range []string{zone.Addr(), "ns.test:" + port} {
		for _, transport := range transports {
			target := dnsTarget(server, probing.DNSOptions{Name: "a.test", Type: "A", Transport: transport})
			res := probe(t.Context(), prober, target)
			assert.Equal(t, probing.ReasonEgressDenied, res.Reason, "%s over %s: %+v", server, transport, res)
			assert.Equal(t, `dns query "a.test." A to "dns://`+server+`": dial `+transport+" "+server+
				": egress to 127.0.0.1 denied: denied range 127.0.0.1/32 (--deny-cidrs)", res.Message)
		}
	}
	assert.Zero(t, zone.Queries(), "a denied server was queried")

	// The same policy lets other addresses through (the zone answers on
	// 127.0.0.1 only, so this one is refused, not denied).
	res := probe(t.Context(), prober, dnsTarget("127.0.0.3:"+port, probing.DNSOptions{Name: "a.test", Type: "A", Transport: "tcp"}))
	assert.Equal(t, probing.ReasonConnectionFailed, res.Reason, "%+v", res)
}

func TestDNSProberInvalidTarget(t *testing.T) {
	t.Parallel()
	server := silentUDP(t, nil)
	valid := probing.DNSOptions{Name: "a.test", Type: "A", Transport: "udp"}
	tests := map[string]struct {
		target      probing.TargetSpec
		wantMessage string
	}{
		"no dns options": {
			target:      probing.TargetSpec{URL: "dns://" + server, Timeout: relaxedTimeout},
			wantMessage: "invalid target: dns target without dns options",
		},
		"unsupported type": {
			target:      dnsTarget(server, probing.DNSOptions{Name: "a.test", Type: "ANY", Transport: "udp"}),
			wantMessage: `invalid target: dns: unsupported record type "ANY"`,
		},
		"label too long": {
			target:      dnsTarget(server, probing.DNSOptions{Name: strings.Repeat("a", 64) + ".test", Type: "A", Transport: "udp"}),
			wantMessage: `invalid target: dns: name "` + strings.Repeat("a", 64) + `.test": Name: segment length too long`,
		},
		"empty label": {
			target:      dnsTarget(server, probing.DNSOptions{Name: "a..test", Type: "A", Transport: "udp"}),
			wantMessage: `invalid target: dns: name "a..test": Name: zero length segment`,
		},
		"name too long": {
			target: dnsTarget(server, probing.DNSOptions{Name: strings.Repeat("abcdefg.", 40), Type: "A", Transport: "udp"}),
		},
		"proxy": {
			target: func() probing.TargetSpec {
				tg := dnsTarget(server, valid)
				tg.Proxy = &probing.Proxy{URL: "http://127.0.0.1:1"}
				return tg
			}(),
			wantMessage: "invalid target: a dns target cannot use a proxy",
		},
		"zero timeout": {
			target: func() probing.TargetSpec { tg := dnsTarget(server, valid); tg.Timeout = 0; return tg }(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := probing.NewTarget(tc.target)
			require.Error(t, err, "refused by NewTarget")
			if tc.wantMessage != "" {
				assert.Equal(t, tc.wantMessage, err.Error())
			}
		})
	}

	// The DNS prober on its own refuses other kinds.
	res := probing.NewDNSProber(probing.ProberOptions{}).Probe(t.Context(), mustTarget(t, probing.TargetSpec{URL: "tcp://127.0.0.1:1", Timeout: time.Second}))
	assert.Equal(t, probing.ReasonInvalidTarget, res.Reason)
	assert.Equal(t, "invalid target: the DNS prober cannot probe tcp targets", res.Message)
}

// The query: the name fully qualified, the type, the RD bit, a random ID
// and an EDNS(0) OPT record of 1232 bytes; the IP family restricts the
// server's addresses.
func TestDNSProberQuery(t *testing.T) {
	t.Parallel()
	resolver := newZone(t)
	var mu sync.Mutex
	var queries []dnsmessage.Message
	record := func(q []byte) [][]byte {
		var m dnsmessage.Message
		if err := m.Unpack(q); err == nil {
			mu.Lock()
			queries = append(queries, m)
			mu.Unlock()
		}
		return [][]byte{respond(t, q, nil)}
	}
	server := startRawUDP(t, record)
	_, port, _ := net.SplitHostPort(server.addr)
	prober := newDNSProber(t, resolver, probing.ProberOptions{})

	for _, rd := range []bool{true, false} {
		target := dnsTarget("ns.test:"+port, probing.DNSOptions{Name: "Mixed.Case.test", Type: "TXT", Transport: "udp", RecursionDesired: rd})
		target.IPFamily = probing.IPFamilyIPv4
		res := probe(t.Context(), prober, target)
		assert.Equal(t, probing.ReasonSucceeded, res.Reason, "%+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, queries, 2)
	for i, q := range queries {
		assert.Equal(t, i == 0, q.RecursionDesired)
		assert.False(t, q.Response)
		require.Len(t, q.Questions, 1)
		assert.Equal(t, dnsmessage.Question{Name: dnsmessage.MustNewName("Mixed.Case.test."), Type: dnsmessage.TypeTXT, Class: dnsmessage.ClassINET}, q.Questions[0])
		require.Len(t, q.Additionals, 1)
		assert.Equal(t, dnsmessage.TypeOPT, q.Additionals[0].Header.Type)
		assert.EqualValues(t, 1232, q.Additionals[0].Header.Class, "EDNS(0) UDP payload size")
	}

	target := dnsTarget("ns.test:"+port, probing.DNSOptions{Name: "a.test", Type: "A", Transport: "udp"})
	target.IPFamily = probing.IPFamilyIPv6 // ns.test has no IPv6 address
	res := probe(t.Context(), prober, target)
	assert.Equal(t, probing.ReasonDNSFailed, res.Reason, "%+v", res)
}
