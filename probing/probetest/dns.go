package probetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

const (
	// minUDPSize is the largest UDP answer every DNS client accepts
	// (RFC 1035); larger answers need EDNS(0) or a retry over TCP.
	minUDPSize = 512
	// maxMessageSize is the largest DNS message (TCP length prefix limit).
	maxMessageSize = 65535
	// tcpIdleTimeout closes TCP connections a client forgot about.
	tcpIdleTimeout = 10 * time.Second
	// answerTTL is the TTL of every answer record, in seconds.
	answerTTL = 1
)

// DNSServer is a minimal DNS server for tests. It listens on 127.0.0.1 on
// the same port for UDP and TCP and answers queries from a fixed table of
// addresses, and records of any type (SetResources):
//
//   - A and AAAA queries for a name of the table get that name's IPv4 or
//     IPv6 addresses; queries of a name with records of the asked type
//     (SetResources) get those records; a name with a CNAME record and
//     nothing of the asked type gets the CNAME and the records of its
//     target; a known name (in the table or with records) without anything
//     of the asked type gets an empty NOERROR answer;
//   - queries for unknown names get NXDOMAIN;
//   - queries for a name given an rcode (SetRcode) get that rcode
//     (SERVFAIL, REFUSED, ...) and no records;
//   - a query that cannot be parsed past its header gets FORMERR, a
//     message too short to carry a header is ignored, and a non-query
//     opcode gets NOTIMP.
//
// UDP answers that do not fit the client's buffer (512 bytes, or the size
// announced in an EDNS(0) OPT record) are truncated, so that clients retry
// over TCP. The table and records can be replaced while the server runs
// (SetRecords, SetResources, SetRcode), and address answers can rotate
// like round-robin DNS (Rotate). A DNSServer is safe for concurrent use.
type DNSServer struct {
	addr    string
	udp     net.PacketConn
	tcp     net.Listener
	queries atomic.Int64

	recordsMu sync.Mutex
	// records, resources and rcodes are keyed by canonical name, and
	// replaced, never modified in place.
	records   map[string][]net.IP
	resources map[string][]resource
	rcodes    map[string]dnsmessage.RCode
	rotate    bool
	answered  map[string]int // answers so far, by name and type (when rotating)

	conns     connSet // TCP connections; the goroutines of both listeners
	closeOnce sync.Once
	closeErr  error
}

// NewDNSServer starts a DNSServer on 127.0.0.1 answering from records,
// which maps host names (case-insensitive, with or without the trailing
// dot) to their addresses. IPv4 addresses (including IPv4-mapped IPv6 ones)
// answer A queries, other IPv6 addresses answer AAAA queries. The table is
// copied. The caller must Close the server.
func NewDNSServer(records map[string][]net.IP) (*DNSServer, error) {
	table, err := buildTable(records)
	if err != nil {
		return nil, err
	}

	// Ask the kernel for a free UDP port, then take the same TCP port. The
	// TCP port may be in use by someone else: try again a few times.
	var lastErr error
	for range 10 {
		udp, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("probetest: listen on UDP: %w", err)
		}
		port := udp.LocalAddr().(*net.UDPAddr).Port
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		tcp, err := net.Listen("tcp", addr)
		if err != nil {
			_ = udp.Close()
			lastErr = err
			continue
		}
		s := &DNSServer{
			records: table,
			addr:    addr,
			udp:     udp,
			tcp:     tcp,
		}
		s.conns.wg.Go(s.serveUDP)
		s.conns.serve(tcp, s.serveConn)
		return s, nil
	}
	return nil, fmt.Errorf("probetest: listen on TCP and UDP on the same port: %w", lastErr)
}

// NewTestDNSServer is NewDNSServer for tests: it fails the test if the
// server cannot start and closes the server when the test ends.
func NewTestDNSServer(t testing.TB, records map[string][]net.IP) *DNSServer {
	t.Helper()
	s, err := NewDNSServer(records)
	if err != nil {
		t.Fatalf("start DNS server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close DNS server: %v", err)
		}
	})
	return s
}

// buildTable checks records and copies them into a table keyed by
// canonical name (see NewDNSServer).
func buildTable(records map[string][]net.IP) (map[string][]net.IP, error) {
	table := make(map[string][]net.IP, len(records))
	for name, ips := range records {
		key := canonicalName(name)
		if key == "" {
			return nil, fmt.Errorf("probetest: invalid record name %q", name)
		}
		for _, ip := range ips {
			if ip.To16() == nil {
				return nil, fmt.Errorf("probetest: invalid address %v for %q", ip, name)
			}
			table[key] = append(table[key], append(net.IP(nil), ip...))
		}
		if _, ok := table[key]; !ok {
			table[key] = nil // known name without addresses
		}
	}
	return table, nil
}

// SetRecords replaces the whole table the server answers from, as
// NewDNSServer's records: a name left out is unknown from now on (NXDOMAIN),
// a name given other addresses is answered with those. Queries answered
// before SetRecords returns may still get the old table.
func (s *DNSServer) SetRecords(records map[string][]net.IP) error {
	table, err := buildTable(records)
	if err != nil {
		return err
	}
	s.recordsMu.Lock()
	defer s.recordsMu.Unlock()
	s.records = table
	return nil
}

// Rotate turns round-robin answers on or off (off by default). When on,
// each answer for a name and family lists the same addresses as the one
// before, rotated by one: the first address of an answer is the second of
// the previous one, as round-robin DNS servers do.
func (s *DNSServer) Rotate(on bool) {
	s.recordsMu.Lock()
	defer s.recordsMu.Unlock()
	s.rotate = on
}

// SetResources replaces the records the server answers with besides the
// addresses of its table (nil removes them all). Each record answers the
// queries of its owner name (Header.Name, case-insensitive, with or
// without the trailing dot) and of the type of its Body, with its
// Header.TTL, in class IN. A name with records is known: queries of its
// other types get an empty NOERROR answer, not NXDOMAIN. A name with a
// CNAME record and no record of the asked type is answered with the CNAME
// and what the server answers for the CNAME's target (up to 8 CNAMEs in a
// row), as an authoritative server does. For example:
//
//	srv.SetResources([]dnsmessage.Resource{
//		{Header: dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName("www.test."), TTL: 60},
//			Body: &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("web.test.")}},
//		{Header: dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName("web.test."), TTL: 60},
//			Body: &dnsmessage.TXTResource{TXT: []string{"v=spf1 -all"}}},
//	})
//
// The records are copied, but not their bodies, which must not be
// modified afterwards. A record that cannot be packed is an error, and
// leaves the records as they were.
func (s *DNSServer) SetResources(rrs []dnsmessage.Resource) error {
	table := make(map[string][]resource, len(rrs))
	for i, r := range rrs {
		res, err := newResource(r)
		if err != nil {
			return fmt.Errorf("probetest: resource %d: %w", i, err)
		}
		key := canonicalName(res.rr.Header.Name.String())
		table[key] = append(table[key], res)
	}
	s.recordsMu.Lock()
	defer s.recordsMu.Unlock()
	s.resources = table
	return nil
}

// SetRcode makes the server answer every query of name (case-insensitive,
// with or without the trailing dot) with rcode and no records, whether it
// knows the name or not: dnsmessage.RCodeServerFailure,
// dnsmessage.RCodeRefused, ... dnsmessage.RCodeSuccess answers the name
// from the table and records again.
func (s *DNSServer) SetRcode(name string, rcode dnsmessage.RCode) error {
	key := canonicalName(name)
	if key == "" {
		return fmt.Errorf("probetest: invalid name %q", name)
	}
	s.recordsMu.Lock()
	defer s.recordsMu.Unlock()
	rcodes := make(map[string]dnsmessage.RCode, len(s.rcodes)+1)
	for k, v := range s.rcodes {
		rcodes[k] = v
	}
	if rcode == dnsmessage.RCodeSuccess {
		delete(rcodes, key)
	} else {
		rcodes[key] = rcode
	}
	s.rcodes = rcodes
	return nil
}

// Addr returns the address the server listens on (UDP and TCP), as
// host:port, for example "127.0.0.1:40053".
func (s *DNSServer) Addr() string { return s.addr }

// Queries returns the number of DNS queries received so far over UDP and
// TCP, including malformed ones that got an error answer (but not messages
// too short to carry a DNS header, nor DNS responses).
func (s *DNSServer) Queries() int64 { return s.queries.Load() }

// Close stops both listeners, closes open TCP connections and waits for
// all the server's goroutines to return. It is safe to call more than
// once; later calls return the first call's result.
func (s *DNSServer) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.conns.close(func() error { return errors.Join(s.udp.Close(), s.tcp.Close()) })
	})
	return s.closeErr
}

func (s *DNSServer) serveUDP() {
	buf := make([]byte, maxMessageSize)
	for {
		n, from, err := s.udp.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.conns.isClosed() {
				return
			}
			continue // a transient error for one datagram
		}
		if resp := s.answer(buf[:n], true); resp != nil {
			_, _ = s.udp.WriteTo(resp, from)
		}
	}
}

// serveConn answers length-prefixed DNS messages on one TCP connection
// until the client closes it, stays idle too long, or the server closes
// (conns closes c when serveConn returns).
func (s *DNSServer) serveConn(c net.Conn) {
	var prefix [2]byte
	buf := make([]byte, maxMessageSize)
	for {
		_ = c.SetDeadline(time.Now().Add(tcpIdleTimeout))
		if _, err := io.ReadFull(c, prefix[:]); err != nil {
			return
		}
		msg := buf[:binary.BigEndian.Uint16(prefix[:])]
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		resp := s.answer(msg, false)
		if resp == nil {
			continue
		}
		out := make([]byte, 2, 2+len(resp))
		binary.BigEndian.PutUint16(out, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// zone is what the server answers from at one moment.
type zone struct {
	records   map[string][]net.IP
	resources map[string][]resource
	rcodes    map[string]dnsmessage.RCode
	rotate    bool
}

// known reports whether name (canonical) has addresses or records.
func (z zone) known(name string) bool {
	_, inTable := z.records[name]
	return inTable || len(z.resources[name]) > 0
}

// zone returns what the server answers from now.
func (s *DNSServer) zone() zone {
	s.recordsMu.Lock()
	defer s.recordsMu.Unlock()
	return zone{records: s.records, resources: s.resources, rcodes: s.rcodes, rotate: s.rotate}
}

// nextAnswer returns how many answers were given for key before, and
// counts this one.
func (s *DNSServer) nextAnswer(key string) int {
	s.recordsMu.Lock()
	defer s.recordsMu.Unlock()
	if s.answered == nil {
		s.answered = map[string]int{}
	}
	n := s.answered[key]
	s.answered[key] = n + 1
	return n
}
