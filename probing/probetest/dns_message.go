package probetest

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// answer builds the response to one DNS message, or returns nil when the
// message deserves no answer.
func (s *DNSServer) answer(req []byte, overUDP bool) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil || h.Response {
		return nil // not even a header, or not a query: never answer
	}
	s.queries.Add(1)
	hdr := dnsmessage.Header{
		ID:                 h.ID,
		Response:           true,
		OpCode:             h.OpCode,
		Authoritative:      true,
		RecursionDesired:   h.RecursionDesired,
		RecursionAvailable: true,
	}
	if h.OpCode != 0 { // only standard queries
		hdr.RCode = dnsmessage.RCodeNotImplemented
		return build(hdr, nil, nil)
	}
	q, err := p.Question()
	if err != nil {
		hdr.RCode = dnsmessage.RCodeFormatError
		return build(hdr, nil, nil)
	}

	limit := maxMessageSize
	if overUDP {
		limit = udpLimit(&p)
	}
	var answers []dnsmessage.Resource
	hdr.RCode, answers = s.resolve(q)
	resp := build(hdr, &q, answers)
	if len(resp) > limit {
		hdr.Truncated = true
		resp = build(hdr, &q, nil)
	}
	return resp
}

// maxCNAMEs is how many CNAMEs in a row an answer follows at most.
const maxCNAMEs = 8

// resolve returns the rcode and answer records of q (see DNSServer).
func (s *DNSServer) resolve(q dnsmessage.Question) (dnsmessage.RCode, []dnsmessage.Resource) {
	z := s.zone()
	name := canonicalName(q.Name.String())
	if rcode, ok := z.rcodes[name]; ok {
		return rcode, nil
	}
	if !z.known(name) {
		return dnsmessage.RCodeNameError, nil
	}
	if q.Class != dnsmessage.ClassINET && q.Class != dnsmessage.ClassANY {
		return dnsmessage.RCodeSuccess, nil
	}
	var answers []dnsmessage.Resource
	owner := q.Name
	for range maxCNAMEs + 1 {
		found := slices.Concat(s.addresses(z, owner, q.Type), z.ofType(owner, q.Type))
		answers = append(answers, found...)
		if len(found) > 0 || q.Type == dnsmessage.TypeCNAME {
			break
		}
		cnames := z.ofType(owner, dnsmessage.TypeCNAME)
		if len(cnames) == 0 {
			break
		}
		answers = append(answers, cnames[0])
		target, ok := cnames[0].Body.(*dnsmessage.CNAMEResource)
		if !ok { // an UnknownResource of type CNAME: not followed
			break
		}
		owner = target.CNAME
	}
	return dnsmessage.RCodeSuccess, answers
}

// addresses returns the address records of owner for an A or AAAA query,
// rotated when the server rotates answers.
func (s *DNSServer) addresses(z zone, owner dnsmessage.Name, typ dnsmessage.Type) []dnsmessage.Resource {
	name := canonicalName(owner.String())
	var ips []net.IP
	for _, ip := range z.records[name] {
		isV4 := ip.To4() != nil
		if (typ == dnsmessage.TypeA && isV4) || (typ == dnsmessage.TypeAAAA && !isV4) {
			ips = append(ips, ip)
		}
	}
	if z.rotate && len(ips) > 1 {
		n := s.nextAnswer(name + "/" + typ.String())
		ips = slices.Concat(ips[n%len(ips):], ips[:n%len(ips)])
	}
	rrs := make([]dnsmessage.Resource, len(ips))
	for i, ip := range ips {
		rrs[i].Header = dnsmessage.ResourceHeader{Name: owner, Class: dnsmessage.ClassINET, TTL: answerTTL}
		if ip4 := ip.To4(); ip4 != nil {
			rrs[i].Body = &dnsmessage.AResource{A: [4]byte(ip4)}
		} else {
			rrs[i].Body = &dnsmessage.AAAAResource{AAAA: [16]byte(ip.To16())}
		}
	}
	return rrs
}

// resource is a record of SetResources, with its type.
type resource struct {
	typ dnsmessage.Type
	rr  dnsmessage.Resource
}

// newResource checks r and returns it with its owner name fully qualified,
// its class IN and its type (the type of its body).
func newResource(r dnsmessage.Resource) (resource, error) {
	name := r.Header.Name.String()
	if canonicalName(name) == "" {
		return resource{}, fmt.Errorf("invalid owner name %q", name)
	}
	if !strings.HasSuffix(name, ".") {
		n, err := dnsmessage.NewName(name + ".")
		if err != nil {
			return resource{}, fmt.Errorf("owner name %q: %w", name, err)
		}
		r.Header.Name = n
	}
	if r.Body == nil {
		return resource{}, fmt.Errorf("%q: no body", name)
	}
	r.Header.Class = dnsmessage.ClassINET
	// The type is what the body packs as: pack the record and read it back.
	msg, err := (&dnsmessage.Message{Answers: []dnsmessage.Resource{r}}).Pack()
	if err != nil {
		return resource{}, fmt.Errorf("%q: %w", name, err)
	}
	var p dnsmessage.Parser
	if _, err := p.Start(msg); err != nil {
		return resource{}, fmt.Errorf("%q: %w", name, err)
	}
	if err := p.SkipAllQuestions(); err != nil {
		return resource{}, fmt.Errorf("%q: %w", name, err)
	}
	rh, err := p.AnswerHeader()
	if err != nil {
		return resource{}, fmt.Errorf("%q: %w", name, err)
	}
	r.Header.Type = rh.Type
	return resource{typ: rh.Type, rr: r}, nil
}

// ofType returns the records of owner of type typ (SetResources), owned by
// owner as written (the query's name, in the query's case).
func (z zone) ofType(owner dnsmessage.Name, typ dnsmessage.Type) []dnsmessage.Resource {
	var rrs []dnsmessage.Resource
	for _, r := range z.resources[canonicalName(owner.String())] {
		if r.typ == typ {
			rr := r.rr
			rr.Header.Name = owner
			rrs = append(rrs, rr)
		}
	}
	return rrs
}

// udpLimit returns the largest UDP answer the client accepts: the EDNS(0)
// payload size if the query carries an OPT record, else 512 bytes. p must
// be positioned after the first question.
func udpLimit(p *dnsmessage.Parser) int {
	limit := minUDPSize
	if p.SkipAllQuestions() != nil || p.SkipAllAnswers() != nil || p.SkipAllAuthorities() != nil {
		return limit
	}
	for {
		rh, err := p.AdditionalHeader()
		if err != nil {
			return limit
		}
		if rh.Type == dnsmessage.TypeOPT && int(rh.Class) > limit {
			limit = min(int(rh.Class), maxMessageSize)
		}
		if p.SkipAdditional() != nil {
			return limit
		}
	}
}

// build packs a response. It returns nil if the message cannot be built,
// which cannot happen for names that were parsed from a query and records
// that SetResources checked.
func build(hdr dnsmessage.Header, q *dnsmessage.Question, answers []dnsmessage.Resource) []byte {
	m := dnsmessage.Message{Header: hdr, Answers: answers}
	if q != nil {
		m.Questions = []dnsmessage.Question{*q}
	}
	msg, err := m.AppendPack(make([]byte, 0, minUDPSize)) // with name compression
	if err != nil {
		return nil
	}
	return msg
}

// canonicalName lower-cases name and removes its trailing dot.
func canonicalName(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}
