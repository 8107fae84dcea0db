package probetest

import (
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

	name := canonicalName(q.Name.String())
	ips, known, rotate := s.lookup(name)
	var answers []net.IP
	switch {
	case !known:
		hdr.RCode = dnsmessage.RCodeNameError
	case q.Class == dnsmessage.ClassINET || q.Class == dnsmessage.ClassANY:
		for _, ip := range ips {
			isV4 := ip.To4() != nil
			if (q.Type == dnsmessage.TypeA && isV4) || (q.Type == dnsmessage.TypeAAAA && !isV4) {
				answers = append(answers, ip)
			}
		}
		if rotate && len(answers) > 1 {
			n := s.nextAnswer(name + "/" + q.Type.String())
			answers = slices.Concat(answers[n%len(answers):], answers[:n%len(answers)])
		}
	}
	resp := build(hdr, &q, answers)
	if len(resp) > limit {
		hdr.Truncated = true
		resp = build(hdr, &q, nil)
	}
	return resp
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
// which cannot happen for names that were parsed from a query.
func build(hdr dnsmessage.Header, q *dnsmessage.Question, answers []net.IP) []byte {
	b := dnsmessage.NewBuilder(make([]byte, 0, minUDPSize), hdr)
	b.EnableCompression()
	if q != nil {
		if b.StartQuestions() != nil || b.Question(*q) != nil {
			return nil
		}
	}
	if b.StartAnswers() != nil {
		return nil
	}
	for _, ip := range answers {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: answerTTL}
		var err error
		if ip4 := ip.To4(); ip4 != nil {
			err = b.AResource(rh, dnsmessage.AResource{A: [4]byte(ip4)})
		} else {
			err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: [16]byte(ip.To16())})
		}
		if err != nil {
			return nil
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return nil
	}
	return msg
}

// canonicalName lower-cases name and removes its trailing dot.
func canonicalName(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}
