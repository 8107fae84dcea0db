package probing

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
)

// The DNS response parser and formatter, on messages no test server sends:
// every section, OPT records, unknown types, odd names.

var testQuestion = dnsmessage.Question{
	Name: dnsmessage.MustNewName("example.test."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET,
}

func testRR(name string, class dnsmessage.Class, body dnsmessage.ResourceBody) dnsmessage.Resource {
	return dnsmessage.Resource{
		Header: dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName(name), Class: class, TTL: 300},
		Body:   body,
	}
}

func optRR(t testing.TB, extRCode dnsmessage.RCode) dnsmessage.Resource {
	var h dnsmessage.ResourceHeader
	require.NoError(t, h.SetEDNS0(1232, extRCode, false))
	return dnsmessage.Resource{Header: h, Body: &dnsmessage.OPTResource{}}
}

// packResponse packs a response to testQuestion with ID 7, after edit.
func packResponse(t testing.TB, edit func(m *dnsmessage.Message)) []byte {
	t.Helper()
	m := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: 7, Response: true},
		Questions: []dnsmessage.Question{testQuestion},
	}
	if edit != nil {
		edit(&m)
	}
	msg, err := m.Pack()
	require.NoError(t, err)
	return msg
}

// parseResponseCase is a response for parseResponse, with the dnsResponse it
// gives or the start of its error.
type parseResponseCase struct {
	msg     []byte
	want    *dnsResponse
	wantErr string
}

// parsedResponseCases are the responses parseResponse reads.
func parsedResponseCases(t testing.TB) map[string]parseResponseCase {
	in := dnsmessage.ClassINET
	return map[string]parseResponseCase{
		"every section, OPT left out": {
			msg: packResponse(t, func(m *dnsmessage.Message) {
				m.Answers = []dnsmessage.Resource{testRR("example.test.", in, &dnsmessage.AResource{A: [4]byte{192, 0, 2, 1}})}
				m.Authorities = []dnsmessage.Resource{testRR("test.", in, &dnsmessage.NSResource{NS: dnsmessage.MustNewName("ns.test.")})}
				m.Additionals = []dnsmessage.Resource{
					testRR("ns.test.", in, &dnsmessage.AAAAResource{AAAA: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}}),
					optRR(t, dnsmessage.RCodeSuccess),
				}
			}),
			want: &dnsResponse{
				rcode:      "NOERROR",
				answers:    []string{"example.test. 300 IN A 192.0.2.1"},
				authority:  []string{"test. 300 IN NS ns.test."},
				additional: []string{"ns.test. 300 IN AAAA 2001:db8::1"},
			},
		},
		"extended rcode": {
			msg: packResponse(t, func(m *dnsmessage.Message) {
				m.Additionals = []dnsmessage.Resource{optRR(t, 16)}
			}),
			want: &dnsResponse{rcode: "BADVERS"},
		},
		"unknown rcode": {
			msg:  packResponse(t, func(m *dnsmessage.Message) { m.RCode = 12 }),
			want: &dnsResponse{rcode: "RCODE12"},
		},
		"unknown types and classes, RFC 3597": {
			msg: packResponse(t, func(m *dnsmessage.Message) {
				m.Answers = []dnsmessage.Resource{
					testRR("example.test.", in, &dnsmessage.UnknownResource{Type: 99, Data: []byte{1, 0xab}}),
					testRR("example.test.", 42, &dnsmessage.UnknownResource{Type: 98}),
					testRR("example.test.", dnsmessage.ClassCHAOS, &dnsmessage.TXTResource{TXT: []string{"a b"}}),
					testRR("example.test.", in, &dnsmessage.UnknownResource{Type: typeCAA, Data: []byte{0, 9, 'i'}}),
					testRR("example.test.", in, &dnsmessage.UnknownResource{Type: typeCAA, Data: []byte{128, 3, 'i', 'o', 'd', 'e', 'f'}}),
				}
			}),
			want: &dnsResponse{rcode: "NOERROR", answers: []string{
				`example.test. 300 IN TYPE99 \# 2 01ab`,
				`example.test. 300 CLASS42 TYPE98 \# 0`,
				`example.test. 300 CH TXT "a b"`,
				`example.test. 300 IN CAA \# 3 000969`,
				`example.test. 300 IN CAA 128 iod "ef"`,
			}},
		},
		"escaped names and strings": {
			msg: packResponse(t, func(m *dnsmessage.Message) {
				m.Answers = []dnsmessage.Resource{
					testRR("example.test.", in, &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("a b\\\"();@$\x00\xff.test.")}),
					testRR("example.test.", in, &dnsmessage.TXTResource{TXT: []string{"", "\n\x7f\"\\ ;"}}),
					testRR("example.test.", in, &dnsmessage.TXTResource{}),
				}
			}),
			want: &dnsResponse{rcode: "NOERROR", answers: []string{
				`example.test. 300 IN CNAME a\032b\\\"\(\)\;\@\$\000\255.test.`,
				`example.test. 300 IN TXT "" "\010\127\"\\ ;"`,
				`example.test. 300 IN TXT`,
			}},
		},
		"no question in an error response": {
			msg:  packResponse(t, func(m *dnsmessage.Message) { m.Questions, m.RCode = nil, dnsmessage.RCodeRefused }),
			want: &dnsResponse{rcode: "REFUSED"},
		},
		"question in another case": {
			msg: packResponse(t, func(m *dnsmessage.Message) {
				m.Questions[0].Name = dnsmessage.MustNewName("EXAMPLE.Test.")
			}),
			want: &dnsResponse{rcode: "NOERROR"},
		},
	}
}

// malformedResponseCases are the responses parseResponse rejects.
func malformedResponseCases(t testing.TB) map[string]parseResponseCase {
	in := dnsmessage.ClassINET
	return map[string]parseResponseCase{
		"another ID": {msg: packResponse(t, func(m *dnsmessage.Message) { m.ID = 8 }), wantErr: errIDMismatch.Error()},
		"too short":  {msg: []byte{0, 7, 0x80}, wantErr: "malformed response: unpacking header: bits: insufficient data for base length type"},
		"empty":      {msg: nil, wantErr: "malformed response: unpacking header: id: insufficient data for base length type"},
		"a query": {
			msg: packResponse(t, func(m *dnsmessage.Message) { m.Response = false }), wantErr: "malformed response: not a response",
		},
		"another opcode": {
			msg: packResponse(t, func(m *dnsmessage.Message) { m.OpCode = 2 }), wantErr: "malformed response: opcode 2 is not a standard query's",
		},
		"no question": {
			msg: packResponse(t, func(m *dnsmessage.Message) { m.Questions = nil }), wantErr: "malformed response: the question is missing",
		},
		"two questions": {
			msg:     packResponse(t, func(m *dnsmessage.Message) { m.Questions = append(m.Questions, testQuestion) }),
			wantErr: "malformed response: 2 questions",
		},
		"another question": {
			msg: packResponse(t, func(m *dnsmessage.Message) {
				m.Questions[0].Name = dnsmessage.MustNewName("other.test.")
			}),
			wantErr: "malformed response: the question is not the query's",
		},
		"two OPT records": {
			msg: packResponse(t, func(m *dnsmessage.Message) {
				m.Additionals = []dnsmessage.Resource{optRR(t, 0), optRR(t, 0)}
			}),
			wantErr: "malformed response: additional section: record 2: more than one OPT record",
		},
		"AAAA record of 4 bytes": {
			msg: packResponse(t, func(m *dnsmessage.Message) {
				m.Answers = []dnsmessage.Resource{testRR("example.test.", in, &dnsmessage.UnknownResource{Type: dnsmessage.TypeAAAA, Data: []byte{1, 2, 3, 4}})}
			}),
			wantErr: "malformed response: answer section: record 1 (AAAA): 4 bytes of data instead of 16",
		},
		"cut in a record": {
			msg: func() []byte {
				msg := packResponse(t, func(m *dnsmessage.Message) {
					m.Answers = []dnsmessage.Resource{testRR("example.test.", in, &dnsmessage.AResource{A: [4]byte{192, 0, 2, 1}})}
				})
				return msg[:len(msg)-2]
			}(),
			wantErr: "malformed response: answer section: record 1 (A): ",
		},
	}
}

func TestParseResponse(t *testing.T) {
	t.Parallel()
	tests := parsedResponseCases(t)
	for name, tc := range malformedResponseCases(t) {
		tests[name] = tc
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := parseResponse(tc.msg, 7, testQuestion, 1<<20)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.True(t, strings.HasPrefix(err.Error(), tc.wantErr), "%q does not start with %q", err, tc.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestBuildQuery(t *testing.T) {
	t.Parallel()
	msg, err := buildQuery(0xbeef, testQuestion, true)
	require.NoError(t, err)
	var m dnsmessage.Message
	require.NoError(t, m.Unpack(msg))
	assert.Equal(t, dnsmessage.Header{ID: 0xbeef, RecursionDesired: true}, m.Header)
	assert.Equal(t, []dnsmessage.Question{testQuestion}, m.Questions)
	require.Len(t, m.Additionals, 1)
	assert.Equal(t, dnsmessage.TypeOPT, m.Additionals[0].Header.Type)
	assert.Equal(t, dnsmessage.Class(ednsUDPSize), m.Additionals[0].Header.Class)

	q := testQuestion
	q.Name = dnsmessage.MustNewName("no-dot.test")
	_, err = buildQuery(1, q, false)
	assert.Error(t, err, "a name that is not fully qualified")
}

// FuzzParseResponse checks that parseResponse never panics on any bytes,
// that it is deterministic, and that the records it formats are one line
// of printable ASCII starting with a fully qualified owner name.
func FuzzParseResponse(f *testing.F) {
	in := dnsmessage.ClassINET
	f.Add(packResponse(f, nil))
	f.Add(packResponse(f, func(m *dnsmessage.Message) {
		m.RCode = dnsmessage.RCodeNameError
		m.Authorities = []dnsmessage.Resource{testRR("test.", in, &dnsmessage.SOAResource{
			NS: dnsmessage.MustNewName("ns.test."), MBox: dnsmessage.MustNewName("root.test."), Serial: 1, MinTTL: 60,
		})}
	}))
	f.Add(packResponse(f, func(m *dnsmessage.Message) {
		m.Answers = []dnsmessage.Resource{
			testRR("example.test.", in, &dnsmessage.AResource{A: [4]byte{192, 0, 2, 1}}),
			testRR("example.test.", in, &dnsmessage.AAAAResource{AAAA: [16]byte{15: 1}}),
			testRR("example.test.", in, &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("a.test.")}),
			testRR("example.test.", in, &dnsmessage.MXResource{Pref: 5, MX: dnsmessage.MustNewName("mx.test.")}),
			testRR("example.test.", in, &dnsmessage.PTRResource{PTR: dnsmessage.MustNewName("p.test.")}),
			testRR("example.test.", in, &dnsmessage.SRVResource{Port: 53, Target: dnsmessage.MustNewName("s.test.")}),
			testRR("example.test.", in, &dnsmessage.TXTResource{TXT: []string{"x\x00y", "\""}}),
			testRR("example.test.", in, &dnsmessage.UnknownResource{Type: typeCAA, Data: []byte("\x00\x05issueca.test")}),
			testRR("example.test.", in, &dnsmessage.UnknownResource{Type: 65, Data: []byte{0, 1, 0}}),
		}
		m.Additionals = []dnsmessage.Resource{optRR(f, 16)}
	}))
	f.Add([]byte{})
	f.Add([]byte("garbage"))
	f.Add([]byte{0, 7, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1}) // a name pointing to itself
	f.Fuzz(func(t *testing.T, msg []byte) {
		// Ask the question the message has, if any, to get past the checks.
		id, q := uint16(7), testQuestion
		var p dnsmessage.Parser
		if h, err := p.Start(msg); err == nil {
			id = h.ID
			if got, err := p.Question(); err == nil {
				q = got
			}
		}
		resp, err := parseResponse(msg, id, q, 1<<20)
		if err != nil {
			if resp != nil || !strings.HasPrefix(err.Error(), "malformed response: ") {
				t.Fatalf("parseResponse: %v and %+v", err, resp)
			}
			if errors.Is(err, errIDMismatch) {
				t.Fatalf("parseResponse: %v, but the ID is the message's", err)
			}
			return
		}
		again, _ := parseResponse(msg, id, q, 1<<20)
		assert.Equal(t, resp, again, "not deterministic")
		if resp.rcode == "" {
			t.Fatal("no rcode")
		}
		for _, section := range [][]string{resp.answers, resp.authority, resp.additional} {
			for _, record := range section {
				checkRecordText(t, record)
			}
		}
	})
}

// checkRecordText fails t unless record is printable ASCII and starts with
// an owner name ending in a dot, a TTL, a class and a type (the data may
// be empty: a TXT record without strings), without a trailing space.
func checkRecordText(t *testing.T, record string) {
	t.Helper()
	for i := 0; i < len(record); i++ {
		if record[i] < ' ' || record[i] > '~' {
			t.Fatalf("record %q: byte %#x is not printable ASCII", record, record[i])
		}
	}
	fields := strings.SplitN(record, " ", 5)
	if len(fields) < 4 || !strings.HasSuffix(fields[0], ".") || strings.HasSuffix(record, " ") {
		t.Fatalf("record %q: not owner, TTL, class, type and data", record)
	}
}
