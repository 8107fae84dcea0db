package probing

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/networkio/webchecker/probing/pattern"
)

// DNSProber probes dns targets: it sends one query to the DNS server the
// target's URL names (dns://server[:port], port 53 by default) and judges
// the response's rcode and answer section (see DNSOptions). It is safe for
// concurrent use.
//
// The server's name, when it is one, is resolved with the prober's
// resolver (ProberOptions.DNSServer), and the egress policy judges the
// server's address, over UDP as over TCP. The query asks for one record
// type of one name, with a random ID and an EDNS(0) OPT record announcing
// a 1232-byte UDP payload; it is sent once (no retransmission: a lost
// datagram is a timeout). Over UDP, datagrams with another ID are ignored,
// as resolvers do against forgeries, until the timeout; over TCP (with
// its 2-byte length prefix) such a response fails the probe. A truncated
// UDP response is judged as it is. The records' zone-file text, which
// DNSAnswer and AnswerMatch see, is bounded to DNSTextPerBodyByte bytes
// per byte of the body limit (256 KiB by default), all sections
// together: the records beyond are left out. No message quotes a record.
type DNSProber struct {
	opts   ProberOptions // with defaults
	dialer *net.Dialer
}

var _ Prober = (*DNSProber)(nil)

// NewDNSProber returns a DNSProber configured by opts: its DNSServer
// resolves the names of DNS servers, its Egress policy judges their
// addresses.
func NewDNSProber(opts ProberOptions) *DNSProber {
	opts = opts.withDefaults()
	return &DNSProber{opts: opts, dialer: newDialer(opts)}
}

// udpBuffers holds the 64 KiB buffers UDP responses are read into: a
// datagram cannot be larger.
var udpBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// dnsQuery is the query of one probe.
type dnsQuery struct {
	addr     string // the server's host:port, as the URL names it
	id       uint16
	question dnsmessage.Question
	msg      []byte // packed
	prefix   string // of the probe's messages
}

// Probe queries the DNS server of t's URL for its DNS options and judges
// the response: its rcode must be one of DNS.Rcodes (NOERROR by default),
// else ReasonUnexpectedRcode; each of DNS.AnswerMatch must match a record
// of the answer section, else ReasonAnswerMismatch; then the Judge, if
// any, judges the Answer. No response within the Timeout is ReasonTimeout, a
// refused connection (or an ICMP port unreachable, over UDP) or a
// malformed response ReasonConnectionFailed, a server name that does not
// resolve ReasonDNSFailed, a denied address ReasonEgressDenied.
func (p *DNSProber) Probe(ctx context.Context, t Target) Result {
	start := time.Now()
	b, err := t.forProber("DNS", KindDNS)
	if err != nil {
		return finish(Result{Reason: ReasonInvalidTarget, Message: err.Error()}, start)
	}
	var seen resolution
	seen.watchAddr(b.addr, false) // a dns target has no proxy
	res := finish(p.probe(ctx, b, &seen, start), start)
	res.ResolvedAddresses = seen.addresses()
	return res
}

func (p *DNSProber) probe(ctx context.Context, t *builtTarget, seen *resolution, start time.Time) Result {
	q, err := newDNSQuery(t)
	if err != nil {
		return Result{Reason: ReasonInvalidTarget, Message: "invalid target: " + err.Error()}
	}

	probeCtx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	resp, err := p.exchange(probeCtx, t, q, seen)
	latency := time.Since(start)
	if err != nil {
		return p.failure(ctx, probeCtx, t, q, err)
	}

	res := judgeDNS(probeCtx, t.DNS, q, resp)
	if res.Success && t.Judge != nil {
		answer := &Answer{
			Kind:    KindDNS,
			Latency: latency,
			DNS: &DNSAnswer{
				Rcode: resp.rcode, Answers: resp.answers, Authority: resp.authority, Additional: resp.additional,
			},
		}
		judgeAnswer(probeCtx, t.Judge, answer, &res)
	}
	return res
}

// dnsQuestion returns the question of o, the valid options of a dns
// target: it fails when the name is not a domain name that a query can
// carry.
func dnsQuestion(o *DNSOptions) (dnsmessage.Question, error) {
	n, err := dnsmessage.NewName(fqdn(o.Name))
	if err != nil {
		return dnsmessage.Question{}, fmt.Errorf("dns: name %q: %w", o.Name, err)
	}
	q := dnsmessage.Question{Name: n, Type: dnsTypeCodes[o.Type], Class: dnsmessage.ClassINET}
	if _, err := buildQuery(0, q, o.RecursionDesired); err != nil {
		return dnsmessage.Question{}, fmt.Errorf("dns: name %q: %w", o.Name, err)
	}
	return q, nil
}

// newDNSQuery builds the query of one probe of t, a dns target, with a
// random ID.
func newDNSQuery(t *builtTarget) (*dnsQuery, error) {
	q := &dnsQuery{
		addr:     t.addr,
		id:       uint16(rand.Uint32()), // math/rand/v2's generator is ChaCha8, randomly seeded: unpredictable
		question: t.dns.question,
		prefix:   t.dns.prefix,
	}
	var err error
	if q.msg, err = buildQuery(q.id, q.question, t.DNS.RecursionDesired); err != nil { // NewTarget built one; kept so that Probe cannot panic
		return nil, fmt.Errorf("dns: name %q: %w", t.DNS.Name, err)
	}
	return q, nil
}

// maxText is the bound of a response's records' text: DNSTextPerBodyByte
// bytes per byte of the body limit.
func (p *DNSProber) maxText() int {
	return int(min(p.opts.BodyLimit, 1<<40) * DNSTextPerBodyByte)
}

// exchange sends q to its server and reads the response, within ctx,
// noting in seen the addresses the server's name resolved to.
func (p *DNSProber) exchange(ctx context.Context, t *builtTarget, q *dnsQuery, seen *resolution) (*dnsResponse, error) {
	conn, err := p.dial(ctx, t, q.addr, seen)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	// A cancelled probe stops waiting at once: reads fail with a timeout,
	// which failure tells from the probe's own timeout by ctx.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if t.DNS.Transport == "tcp" {
		return exchangeTCP(conn, q, p.maxText())
	}
	return exchangeUDP(conn, q, p.maxText())
}

// dial connects to the DNS server at addr (host:port) over t's transport,
// restricted to t's IP family, with the egress policy; seen notes the
// addresses the server's name resolved to.
func (p *DNSProber) dial(ctx context.Context, t *builtTarget, addr string, seen *resolution) (net.Conn, error) {
	if t.DNS.Transport == "tcp" {
		return dialTarget(ctx, p.dialer, t, addr, seen)
	}
	network := "udp"
	switch t.IPFamily {
	case IPFamilyIPv4:
		network = "udp4"
	case IPFamilyIPv6:
		network = "udp6"
	}
	return resolvingWith(p.dialer, t.DNSServer).DialContext(seen.trace(withEgressAllowance(ctx, t)), network, pinnedDialAddress(ctx, addr))
}

// exchangeUDP sends q in one datagram and returns the first response with
// its ID: datagrams with another ID are ignored.
func exchangeUDP(conn net.Conn, q *dnsQuery, maxText int) (*dnsResponse, error) {
	if _, err := conn.Write(q.msg); err != nil {
		return nil, err
	}
	bufp := udpBuffers.Get().(*[]byte)
	defer udpBuffers.Put(bufp)
	for {
		n, err := conn.Read(*bufp)
		if err != nil {
			return nil, err
		}
		resp, err := parseResponse((*bufp)[:n], q.id, q.question, maxText)
		if errors.Is(err, errIDMismatch) {
			continue
		}
		return resp, err
	}
}

// exchangeTCP sends q with its 2-byte length prefix and reads one response.
func exchangeTCP(conn net.Conn, q *dnsQuery, maxText int) (*dnsResponse, error) {
	out := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(q.msg)), uint16(len(q.msg)))
	// A server that closed the connection (or reset it: timing) may have
	// responded first: its response is still read.
	if _, err := conn.Write(append(out, q.msg...)); err != nil && !closedByServer(err) {
		return nil, err
	}
	var prefix [2]byte
	if n, err := io.ReadFull(conn, prefix[:]); err != nil {
		switch {
		case !closedByServer(err):
			return nil, err
		case n == 0:
			return nil, fixedError("the server closed the connection without responding")
		default:
			return nil, malformed("the server closed the connection in the length prefix")
		}
	}
	msg := make([]byte, binary.BigEndian.Uint16(prefix[:]))
	if _, err := io.ReadFull(conn, msg); err != nil {
		if closedByServer(err) {
			return nil, malformed("the server closed the connection in the middle of the response")
		}
		return nil, err
	}
	return parseResponse(msg, q.id, q.question, maxText)
}

// failure classifies the error of an exchange. ctx is the caller's
// context, probeCtx the one bounded by the target's timeout.
func (p *DNSProber) failure(ctx, probeCtx context.Context, t *builtTarget, q *dnsQuery, err error) Result {
	var netErr net.Error
	switch {
	case ctx.Err() != nil:
		return Result{Reason: ReasonTimeout, Message: q.prefix + "probe cancelled: " + ctx.Err().Error()}
	case probeCtx.Err() != nil || (errors.As(err, &netErr) && netErr.Timeout()):
		return Result{Reason: ReasonTimeout, Message: q.prefix + "timeout after " + t.Timeout.String()}
	}
	host, _, _ := net.SplitHostPort(q.addr)
	scope := textScope{dnsServer: p.opts.dnsServerOf(t), addr: q.addr, names: []string{host}}
	return Result{Reason: classify(err), Message: q.prefix + errorText(err, scope)}
}

// judgeDNS judges a response's rcode, then its answer section. Matching
// the answers with o.AnswerMatch is bounded: the program size of each
// expression times the length of each record it is matched on counts
// against pattern.MaxWork steps for the whole probe (a hostile server can
// send up to 64 KiB of records), and each match stops when ctx (the
// probe's) ends; either fails the probe (ReasonAnswerMismatch, or
// ReasonTimeout).
func judgeDNS(ctx context.Context, o *DNSOptions, q *dnsQuery, resp *dnsResponse) Result {
	accepted := o.Rcodes
	if len(accepted) == 0 {
		accepted = []string{"NOERROR"}
	}
	if !slices.Contains(accepted, resp.rcode) {
		expected := accepted[0]
		if len(accepted) > 1 {
			expected = "one of " + strings.Join(accepted, ", ")
		}
		return Result{
			Reason:  ReasonUnexpectedRcode,
			Message: fmt.Sprintf("%srcode %s (expected %s)", q.prefix, resp.rcode, expected),
		}
	}
	work := int64(0)
	for i, re := range o.AnswerMatch {
		found := false
		for _, record := range resp.answers {
			if work += re.Work(len(record)); work > pattern.MaxWork {
				return Result{Reason: ReasonAnswerMismatch, Message: fmt.Sprintf(
					"%sanswer section too large to match: answerMatch[%d] would take more than %d steps of matching work", q.prefix, i, pattern.MaxWork)}
			}
			matched, err := re.MatchStringContext(ctx, record)
			if err != nil {
				return Result{Reason: ReasonTimeout, Message: fmt.Sprintf("%stimeout while matching the answer section with answerMatch[%d]", q.prefix, i)}
			}
			if found = matched; found {
				break
			}
		}
		if found {
			continue
		}
		msg := fmt.Sprintf("%sno answer record matches %q", q.prefix, re.String())
		switch {
		case resp.cut:
			msg += " (records beyond the text bound were left out)"
		case len(resp.answers) == 0:
			msg += " (the answer section is empty)"
		}
		return Result{Reason: ReasonAnswerMismatch, Message: msg}
	}
	return Result{Success: true, Reason: ReasonSucceeded, Message: ReadyMessage}
}
