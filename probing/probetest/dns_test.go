package probetest_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/probetest"
)

func testRecords() map[string][]net.IP {
	many := make([]net.IP, 200) // too many for one UDP answer
	for i := range many {
		many[i] = net.IPv4(127, 0, 1, byte(i))
	}
	return map[string][]net.IP{
		"healthy.test":  {net.IPv4(127, 0, 0, 1)},
		"V6.Test.":      {net.IPv6loopback},
		"dual.test":     {net.IPv4(127, 0, 0, 2), net.IPv6loopback},
		"many.test":     many,
		"noaddrs.test.": nil,
	}
}

func lookupCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tcpOnlyResolver is a resolver that queries server over TCP only.
func tcpOnlyResolver(server string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", server)
		},
	}
}

func TestDNSServerResolve(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, testRecords())

	tests := map[string]struct {
		resolver *net.Resolver
		network  string
		host     string
		want     []string
		notFound bool
	}{
		"known name over UDP": {
			resolver: probing.NewResolver(srv.Addr()), network: "ip4", host: "healthy.test",
			want: []string{"127.0.0.1"},
		},
		"case and trailing dot are ignored": {
			resolver: probing.NewResolver(srv.Addr()), network: "ip4", host: "HEALTHY.Test.",
			want: []string{"127.0.0.1"},
		},
		"IPv6 name": {
			resolver: probing.NewResolver(srv.Addr()), network: "ip6", host: "v6.test",
			want: []string{"::1"},
		},
		"both families": {
			resolver: probing.NewResolver(srv.Addr()), network: "ip", host: "dual.test",
			want: []string{"127.0.0.2", "::1"},
		},
		"unknown name": {
			resolver: probing.NewResolver(srv.Addr()), network: "ip", host: "badnews.me",
			notFound: true,
		},
		"known name without addresses": {
			resolver: probing.NewResolver(srv.Addr()), network: "ip", host: "noaddrs.test",
			notFound: true,
		},
		"known name over TCP": {
			resolver: tcpOnlyResolver(srv.Addr()), network: "ip4", host: "healthy.test",
			want: []string{"127.0.0.1"},
		},
		"unknown name over TCP": {
			resolver: tcpOnlyResolver(srv.Addr()), network: "ip", host: "badnews.me",
			notFound: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addrs, err := tc.resolver.LookupNetIP(lookupCtx(t), tc.network, tc.host)
			if tc.notFound {
				var dnsErr *net.DNSError
				require.ErrorAs(t, err, &dnsErr)
				assert.True(t, dnsErr.IsNotFound, "IsNotFound: %v", err)
				return
			}
			require.NoError(t, err)
			got := make([]string, len(addrs))
			for i, a := range addrs {
				got[i] = a.Unmap().String()
			}
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}

// A UDP answer too large for the client is truncated; the Go resolver then
// asks again over TCP and gets everything.
func TestDNSServerTruncatesToTCP(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, testRecords())

	addrs, err := probing.NewResolver(srv.Addr()).LookupNetIP(lookupCtx(t), "ip4", "many.test")
	require.NoError(t, err)
	assert.Len(t, addrs, 200)
	assert.Contains(t, addrs, netip.MustParseAddr("127.0.1.199"))
}

// exchange sends raw messages over one UDP socket and returns the first
// answer.
func exchange(t *testing.T, server string, msgs ...[]byte) dnsmessage.Message {
	t.Helper()
	conn, err := net.Dial("udp", server)
	require.NoError(t, err)
	defer conn.Close()
	for _, m := range msgs {
		_, err := conn.Write(m)
		require.NoError(t, err)
	}
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	buf := make([]byte, 65535)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	var resp dnsmessage.Message
	require.NoError(t, resp.Unpack(buf[:n]))
	return resp
}

func query(t *testing.T, id uint16, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	msg := dnsmessage.Message{
		Header: dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{
			Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET,
		}},
	}
	b, err := msg.Pack()
	require.NoError(t, err)
	return b
}

func TestDNSServerRawAnswers(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, testRecords())

	tests := map[string]struct {
		name      string
		typ       dnsmessage.Type
		wantRCode dnsmessage.RCode
		wantCount int
	}{
		"A of a known name":                 {name: "healthy.test.", typ: dnsmessage.TypeA, wantRCode: dnsmessage.RCodeSuccess, wantCount: 1},
		"AAAA of an IPv4-only name":         {name: "healthy.test.", typ: dnsmessage.TypeAAAA, wantRCode: dnsmessage.RCodeSuccess},
		"MX of a known name":                {name: "healthy.test.", typ: dnsmessage.TypeMX, wantRCode: dnsmessage.RCodeSuccess},
		"AAAA of an IPv6 name":              {name: "v6.test.", typ: dnsmessage.TypeAAAA, wantRCode: dnsmessage.RCodeSuccess, wantCount: 1},
		"A of an unknown name":              {name: "badnews.me.", typ: dnsmessage.TypeA, wantRCode: dnsmessage.RCodeNameError},
		"A of a known name in another case": {name: "Dual.TEST.", typ: dnsmessage.TypeA, wantRCode: dnsmessage.RCodeSuccess, wantCount: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp := exchange(t, srv.Addr(), query(t, 42, tc.name, tc.typ))
			assert.Equal(t, uint16(42), resp.ID)
			assert.True(t, resp.Response)
			assert.Equal(t, tc.wantRCode, resp.RCode)
			require.Len(t, resp.Questions, 1)
			assert.Equal(t, tc.name, resp.Questions[0].Name.String())
			assert.Len(t, resp.Answers, tc.wantCount)
		})
	}
}

func TestDNSServerGarbage(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, nil)

	// Too short for a header: no answer, so the first answer read is the
	// one to the valid query sent next.
	resp := exchange(t, srv.Addr(), []byte{1, 2, 3}, query(t, 7, "x.test.", dnsmessage.TypeA))
	assert.Equal(t, uint16(7), resp.ID)
	assert.Equal(t, dnsmessage.RCodeNameError, resp.RCode)

	// A header announcing a question that is not there: FORMERR.
	resp = exchange(t, srv.Addr(), []byte{0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff})
	assert.Equal(t, uint16(9), resp.ID)
	assert.Equal(t, dnsmessage.RCodeFormatError, resp.RCode)
}

func TestDNSServerQueriesAndClose(t *testing.T) {
	t.Parallel()
	srv, err := probetest.NewDNSServer(map[string][]net.IP{"healthy.test": {net.IPv4(127, 0, 0, 1)}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	host, _, err := net.SplitHostPort(srv.Addr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.Zero(t, srv.Queries())

	exchange(t, srv.Addr(), query(t, 1, "healthy.test.", dnsmessage.TypeA))
	assert.Equal(t, int64(1), srv.Queries())

	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close(), "Close is idempotent")

	// Nothing listens any more.
	_, err = net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	assert.Error(t, err)
}

func TestNewDNSServerRejectsBadRecords(t *testing.T) {
	t.Parallel()
	_, err := probetest.NewDNSServer(map[string][]net.IP{"bad.test": {net.IP{1, 2, 3}}})
	assert.Error(t, err)
	_, err = probetest.NewDNSServer(map[string][]net.IP{".": {net.IPv4(127, 0, 0, 1)}})
	assert.Error(t, err)
}

func TestDNSServerSetRecords(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, map[string][]net.IP{"moving.test": {net.IPv4(127, 0, 0, 1)}})
	resolver := probing.NewResolver(srv.Addr())

	addrs, err := resolver.LookupNetIP(lookupCtx(t), "ip4", "moving.test")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, addrs)

	require.NoError(t, srv.SetRecords(map[string][]net.IP{"moving.test": {net.IPv4(127, 0, 0, 2)}}))
	addrs, err = resolver.LookupNetIP(lookupCtx(t), "ip4", "moving.test")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.2")}, addrs, "the new address")

	require.NoError(t, srv.SetRecords(nil))
	_, err = resolver.LookupNetIP(lookupCtx(t), "ip4", "moving.test")
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	assert.True(t, dnsErr.IsNotFound, "a removed name is unknown: %v", err)

	assert.Error(t, srv.SetRecords(map[string][]net.IP{"bad.test": {net.IP{1, 2, 3}}}))
}

func TestDNSServerRotate(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, map[string][]net.IP{
		"rr.test": {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 3)},
	})
	first := func() string {
		resp := exchange(t, srv.Addr(), query(t, 1, "rr.test.", dnsmessage.TypeA))
		require.NotEmpty(t, resp.Answers)
		a := resp.Answers[0].Body.(*dnsmessage.AResource).A
		return netip.AddrFrom4(a).String()
	}

	assert.Equal(t, []string{"127.0.0.1", "127.0.0.1"}, []string{first(), first()}, "no rotation by default")
	srv.Rotate(true)
	assert.Equal(t, []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.1"}, []string{first(), first(), first(), first()})
	srv.Rotate(false)
	assert.Equal(t, "127.0.0.1", first())
}

func rr(name string, ttl uint32, body dnsmessage.ResourceBody) dnsmessage.Resource {
	return dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName(name), TTL: ttl}, Body: body}
}

// resourceText is a record as the tests compare it.
func resourceText(r dnsmessage.Resource) string {
	return fmt.Sprintf("%s %d %v %s", r.Header.Name.String(), r.Header.TTL, r.Header.Type, r.Body.GoString())
}

func TestDNSServerResources(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, map[string][]net.IP{"web.test": {net.IPv4(127, 0, 0, 5)}})
	require.NoError(t, srv.SetResources([]dnsmessage.Resource{
		rr("www.test.", 60, &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("web.test.")}),
		rr("web.test", 60, &dnsmessage.TXTResource{TXT: []string{"v=spf1 -all"}}),
		rr("Mail.Test.", 60, &dnsmessage.MXResource{Pref: 10, MX: dnsmessage.MustNewName("mx.test.")}),
		rr("dangling.test.", 60, &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("nowhere.test.")}),
		rr("loop1.test.", 60, &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("loop2.test.")}),
		rr("loop2.test.", 60, &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("loop1.test.")}),
	}))
	var (
		cname = (&dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("web.test.")}).GoString()
		a     = (&dnsmessage.AResource{A: [4]byte{127, 0, 0, 5}}).GoString()
		txt   = (&dnsmessage.TXTResource{TXT: []string{"v=spf1 -all"}}).GoString()
		mx    = (&dnsmessage.MXResource{Pref: 10, MX: dnsmessage.MustNewName("mx.test.")}).GoString()
		dang  = (&dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("nowhere.test.")}).GoString()
	)

	tests := map[string]struct {
		name      string
		typ       dnsmessage.Type
		wantRCode dnsmessage.RCode
		want      []string
	}{
		"CNAME followed to an address": {
			name: "www.test.", typ: dnsmessage.TypeA,
			want: []string{"www.test. 60 TypeCNAME " + cname, "web.test. 1 TypeA " + a},
		},
		"CNAME followed to a TXT record": {
			name: "www.test.", typ: dnsmessage.TypeTXT,
			want: []string{"www.test. 60 TypeCNAME " + cname, "web.test. 60 TypeTXT " + txt},
		},
		"CNAME asked for": {
			name: "WWW.test.", typ: dnsmessage.TypeCNAME, want: []string{"WWW.test. 60 TypeCNAME " + cname},
		},
		"TXT record of a name with an address": {
			name: "web.test.", typ: dnsmessage.TypeTXT, want: []string{"web.test. 60 TypeTXT " + txt},
		},
		"MX record, owner name in the query's case": {
			name: "mail.test.", typ: dnsmessage.TypeMX, want: []string{"mail.test. 60 TypeMX " + mx},
		},
		"name known by its records only": {name: "mail.test.", typ: dnsmessage.TypeA},
		"CNAME to an unknown name": {
			name: "dangling.test.", typ: dnsmessage.TypeA, want: []string{"dangling.test. 60 TypeCNAME " + dang},
		},
		"unknown name":       {name: "nowhere.test.", typ: dnsmessage.TypeTXT, wantRCode: dnsmessage.RCodeNameError},
		"name of the table":  {name: "web.test.", typ: dnsmessage.TypeA, want: []string{"web.test. 1 TypeA " + a}},
		"table, other types": {name: "web.test.", typ: dnsmessage.TypeMX},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, resp := range []dnsmessage.Message{
				exchange(t, srv.Addr(), query(t, 3, tc.name, tc.typ)),
				exchangeTCP(t, srv.Addr(), query(t, 3, tc.name, tc.typ)),
			} {
				assert.Equal(t, tc.wantRCode, resp.RCode)
				got := make([]string, len(resp.Answers))
				for i, r := range resp.Answers {
					got[i] = resourceText(r)
					assert.Equal(t, dnsmessage.ClassINET, r.Header.Class)
				}
				if len(tc.want) == 0 {
					assert.Empty(t, got)
					continue
				}
				assert.Equal(t, tc.want, got)
			}
		})
	}

	t.Run("CNAME loop", func(t *testing.T) {
		t.Parallel()
		resp := exchange(t, srv.Addr(), query(t, 4, "loop1.test.", dnsmessage.TypeA))
		assert.Equal(t, dnsmessage.RCodeSuccess, resp.RCode)
		assert.Len(t, resp.Answers, 9, "the loop is followed a bounded number of times")
	})
}

func TestDNSServerSetResourcesErrors(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, nil)
	require.NoError(t, srv.SetResources([]dnsmessage.Resource{
		rr("kept.test.", 1, &dnsmessage.TXTResource{TXT: []string{"kept"}}),
	}))
	for name, rrs := range map[string][]dnsmessage.Resource{
		"no body":         {{Header: dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName("x.test.")}}},
		"no name":         {{Body: &dnsmessage.TXTResource{TXT: []string{"x"}}}},
		"root name":       {rr(".", 1, &dnsmessage.TXTResource{TXT: []string{"x"}})},
		"unpackable body": {rr("x.test.", 1, &dnsmessage.TXTResource{TXT: []string{strings.Repeat("x", 256)}})},
		"empty label":     {rr("x..test.", 1, &dnsmessage.TXTResource{TXT: []string{"x"}})},
	} {
		assert.Error(t, srv.SetResources(rrs), name)
	}
	resp := exchange(t, srv.Addr(), query(t, 5, "kept.test.", dnsmessage.TypeTXT))
	assert.Len(t, resp.Answers, 1, "a failed SetResources keeps the records")

	require.NoError(t, srv.SetResources(nil))
	resp = exchange(t, srv.Addr(), query(t, 5, "kept.test.", dnsmessage.TypeTXT))
	assert.Equal(t, dnsmessage.RCodeNameError, resp.RCode, "nil removes every record")
}

func TestDNSServerSetRcode(t *testing.T) {
	t.Parallel()
	srv := probetest.NewTestDNSServer(t, testRecords())
	require.NoError(t, srv.SetRcode("HEALTHY.test.", dnsmessage.RCodeServerFailure))
	require.NoError(t, srv.SetRcode("unknown.test", dnsmessage.RCodeRefused))
	assert.Error(t, srv.SetRcode("", dnsmessage.RCodeRefused))

	resp := exchange(t, srv.Addr(), query(t, 6, "healthy.test.", dnsmessage.TypeA))
	assert.Equal(t, dnsmessage.RCodeServerFailure, resp.RCode)
	assert.Empty(t, resp.Answers)
	require.Len(t, resp.Questions, 1, "the question is repeated")
	resp = exchangeTCP(t, srv.Addr(), query(t, 6, "unknown.test.", dnsmessage.TypeTXT))
	assert.Equal(t, dnsmessage.RCodeRefused, resp.RCode)
	resp = exchange(t, srv.Addr(), query(t, 6, "dual.test.", dnsmessage.TypeA))
	assert.Equal(t, dnsmessage.RCodeSuccess, resp.RCode, "other names are answered as before")

	require.NoError(t, srv.SetRcode("healthy.test", dnsmessage.RCodeSuccess))
	resp = exchange(t, srv.Addr(), query(t, 6, "healthy.test.", dnsmessage.TypeA))
	assert.Equal(t, dnsmessage.RCodeSuccess, resp.RCode)
	assert.Len(t, resp.Answers, 1, "RCodeSuccess answers from the table again")
	resp = exchange(t, srv.Addr(), query(t, 6, "unknown.test.", dnsmessage.TypeTXT))
	assert.Equal(t, dnsmessage.RCodeRefused, resp.RCode, "the other name keeps its rcode")
}

// exchangeTCP sends one message over TCP and returns the answer.
func exchangeTCP(t *testing.T, server string, msg []byte) dnsmessage.Message {
	t.Helper()
	conn, err := net.Dial("tcp", server)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Write(append([]byte{byte(len(msg) >> 8), byte(len(msg))}, msg...))
	require.NoError(t, err)
	var prefix [2]byte
	_, err = io.ReadFull(conn, prefix[:])
	require.NoError(t, err)
	buf := make([]byte, int(prefix[0])<<8|int(prefix[1]))
	_, err = io.ReadFull(conn, buf)
	require.NoError(t, err)
	var resp dnsmessage.Message
	require.NoError(t, resp.Unpack(buf))
	return resp
}
