package probing

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// The DNS messages of a dns probe: the query it sends, and the response
// parsed into the zone-file text a DNSAnswer holds.

// ednsUDPSize is the UDP payload size the query announces in its EDNS(0)
// OPT record: the size DNS Flag Day 2020 recommends, which avoids IP
// fragmentation.
const ednsUDPSize = 1232

// typeCAA is the CAA record type (RFC 8659), which dnsmessage does not name.
const typeCAA dnsmessage.Type = 257

// dnsTypeCodes are the codes of DNSTypes.
var dnsTypeCodes = map[string]dnsmessage.Type{
	"A": dnsmessage.TypeA, "AAAA": dnsmessage.TypeAAAA, "CNAME": dnsmessage.TypeCNAME,
	"MX": dnsmessage.TypeMX, "NS": dnsmessage.TypeNS, "PTR": dnsmessage.TypePTR,
	"SOA": dnsmessage.TypeSOA, "SRV": dnsmessage.TypeSRV, "TXT": dnsmessage.TypeTXT, "CAA": typeCAA,
}

// rcodeNames are the mnemonics of the response codes (RFC 6895); other
// codes are named "RCODE" and their number.
var rcodeNames = map[dnsmessage.RCode]string{
	0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED",
	6: "YXDOMAIN", 7: "YXRRSET", 8: "NXRRSET", 9: "NOTAUTH", 10: "NOTZONE", 16: "BADVERS",
}

func rcodeName(rc dnsmessage.RCode) string {
	if name, ok := rcodeNames[rc]; ok {
		return name
	}
	return "RCODE" + strconv.Itoa(int(rc))
}

// classNames are the mnemonics of the classes; others are named "CLASS"
// and their number (RFC 3597).
var classNames = map[dnsmessage.Class]string{
	dnsmessage.ClassINET: "IN", dnsmessage.ClassCSNET: "CS", dnsmessage.ClassCHAOS: "CH",
	dnsmessage.ClassHESIOD: "HS", dnsmessage.ClassANY: "ANY",
}

// typeName returns the mnemonic of the types the formatter knows, and
// "TYPE" and the number of the others (RFC 3597).
func typeName(t dnsmessage.Type) string {
	for name, code := range dnsTypeCodes {
		if code == t {
			return name
		}
	}
	return "TYPE" + strconv.Itoa(int(t))
}

// fqdn returns name fully qualified: with a trailing dot.
func fqdn(name string) string {
	if strings.HasSuffix(name, ".") {
		return name
	}
	return name + "."
}

// buildQuery packs a standard query for q with the given ID and RD bit,
// and an EDNS(0) OPT record announcing ednsUDPSize. It fails for a name
// that is not a valid domain name (an empty label, a label longer than 63
// bytes, a name longer than 255).
func buildQuery(id uint16, q dnsmessage.Question, rd bool) ([]byte, error) {
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), dnsmessage.Header{ID: id, RecursionDesired: rd})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAdditionals(); err != nil {
		return nil, err
	}
	var opt dnsmessage.ResourceHeader
	if err := opt.SetEDNS0(ednsUDPSize, dnsmessage.RCodeSuccess, false); err != nil {
		return nil, err
	}
	if err := b.OPTResource(opt, dnsmessage.OPTResource{}); err != nil {
		return nil, err
	}
	return b.Finish()
}

// dnsResponse is a response parsed for a probe.
type dnsResponse struct {
	// rcode is the (extended) response code's mnemonic.
	rcode string
	// The records of each section in zone-file form; additional leaves out
	// the OPT pseudo-record.
	answers, authority, additional []string
	// cut tells that records were left out: their text would have made
	// the sections' text larger than the bound parseResponse was given.
	cut bool
}

// DNSTextPerBodyByte is how many bytes of zone-file text the records of a
// DNS response may take, for each byte of ProberOptions.BodyLimit: 4, so
// 256 KiB with the default body limit. Records beyond are left out
// (DNSAnswer holds the first ones), as body bytes beyond the limit are
// not read. The text of a record can be many times its wire size: a
// compressed name is 2 bytes on the wire and up to 1,020 bytes of text
// (255 bytes, each escaped as \DDD), so that a 64 KiB response of 4,680
// CNAME records would take 9.6 MB of text.
const DNSTextPerBodyByte = 4

// errIDMismatch is the error of a response whose ID is not the query's: on
// UDP an answer to someone else (or a forgery), ignored; on TCP a failure.
// A message that has no DNS header, or is not a response, is malformed
// whatever its first bytes.
var errIDMismatch error = fixedError("malformed response: its ID is not the query's")

// malformed returns the error of a response that does not parse. Its
// text is fixed (see fixedError): args are numbers, this package's own
// errors and dnsmessage's parse errors, whose texts are fixed too (they
// name what could not be parsed, never its bytes).
func malformed(format string, args ...any) error {
	return fixedError(fmt.Sprintf("malformed response: "+format, args...))
}

// parseResponse parses msg as the response to the query with the given ID
// and question q: it must be a response with the same ID and opcode 0, and
// repeat the question (servers may leave it out of an error response).
// Every error says the response is malformed; errIDMismatch is the error
// of a response to another query. The records' text (see formatRecord)
// takes at most maxText bytes, all sections together: the records beyond
// are skipped, unformatted, and the response is marked cut.
func parseResponse(msg []byte, id uint16, q dnsmessage.Question, maxText int) (*dnsResponse, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	switch {
	case err != nil:
		return nil, malformed("%v", err) // "unpacking header: ..."
	case !h.Response:
		return nil, malformed("not a response")
	case h.ID != id:
		return nil, errIDMismatch
	case h.OpCode != 0:
		return nil, malformed("opcode %d is not a standard query's", h.OpCode)
	}
	questions, err := p.AllQuestions()
	if err != nil {
		return nil, malformed("question: %v", err)
	}
	switch {
	case len(questions) > 1:
		return nil, malformed("%d questions", len(questions))
	case len(questions) == 0 && h.RCode == dnsmessage.RCodeSuccess:
		return nil, malformed("the question is missing")
	case len(questions) == 1 && !sameQuestion(questions[0], q):
		return nil, malformed("the question is not the query's")
	}
	resp := &dnsResponse{}
	rcode := h.RCode
	text := &textBudget{left: maxText}
	if resp.answers, err = parseSection(&p, p.AnswerHeader, p.SkipAnswer, nil, text); err != nil {
		return nil, malformed("answer section: %v", err)
	}
	if resp.authority, err = parseSection(&p, p.AuthorityHeader, p.SkipAuthority, nil, text); err != nil {
		return nil, malformed("authority section: %v", err)
	}
	seenOPT := false
	onOPT := func(rh dnsmessage.ResourceHeader) error {
		if seenOPT {
			return errors.New("more than one OPT record")
		}
		seenOPT, rcode = true, rh.ExtendedRCode(h.RCode)
		return p.SkipAdditional()
	}
	if resp.additional, err = parseSection(&p, p.AdditionalHeader, p.SkipAdditional, onOPT, text); err != nil {
		return nil, malformed("additional section: %v", err)
	}
	resp.rcode, resp.cut = rcodeName(rcode), text.cut
	return resp, nil
}

// sameQuestion reports whether a response's question is the query's (the
// name compared without regard to ASCII case).
func sameQuestion(a, b dnsmessage.Question) bool {
	return a.Type == b.Type && a.Class == b.Class && strings.EqualFold(a.Name.String(), b.Name.String())
}

// textBudget is what is left of the bound on a response's text.
type textBudget struct {
	left int
	cut  bool // a record was left out
}

// parseSection formats the records of one section, read with next (the
// parser's AnswerHeader, AuthorityHeader or AdditionalHeader) and skip
// (SkipAnswer, ...), within text: once a record's text does not fit,
// it and the records after it are skipped (an OPT record is still read).
// onOPT, when set, consumes an OPT record instead.
func parseSection(p *dnsmessage.Parser, next func() (dnsmessage.ResourceHeader, error), skip func() error,
	onOPT func(dnsmessage.ResourceHeader) error, text *textBudget,
) ([]string, error) {
	var records []string
	for i := 1; ; i++ {
		rh, err := next()
		if errors.Is(err, dnsmessage.ErrSectionDone) {
			return records, nil
		}
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if rh.Type == dnsmessage.TypeOPT && onOPT != nil {
			if err := onOPT(rh); err != nil {
				return nil, fmt.Errorf("record %d: %w", i, err)
			}
			continue
		}
		if text.cut {
			if err := skip(); err != nil {
				return nil, fmt.Errorf("record %d: %w", i, err)
			}
			continue
		}
		data, err := formatRData(p, rh)
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, typeName(rh.Type), err)
		}
		record := formatHeader(rh)
		if data != "" { // only a TXT record without strings has none
			record += " " + data
		}
		if len(record) > text.left {
			text.cut = true
			continue
		}
		text.left -= len(record)
		records = append(records, record)
	}
}

// formatHeader returns the owner name, TTL, class and type of a record in
// zone-file form: "example.com. 300 IN A".
func formatHeader(rh dnsmessage.ResourceHeader) string {
	class, ok := classNames[rh.Class]
	if !ok {
		class = "CLASS" + strconv.Itoa(int(rh.Class))
	}
	return formatName(rh.Name) + " " + strconv.FormatUint(uint64(rh.TTL), 10) + " " + class + " " + typeName(rh.Type)
}

// formatRData reads the data of the record whose header p just read and
// returns it in zone-file form; types the formatter does not know (and
// CAA data that does not parse) in the generic form of RFC 3597.
func formatRData(p *dnsmessage.Parser, rh dnsmessage.ResourceHeader) (string, error) {
	switch rh.Type {
	case dnsmessage.TypeA:
		if rh.Length != 4 {
			return "", fmt.Errorf("%d bytes of data instead of 4", rh.Length)
		}
		r, err := p.AResource()
		return netip.AddrFrom4(r.A).String(), err
	case dnsmessage.TypeAAAA:
		if rh.Length != 16 {
			return "", fmt.Errorf("%d bytes of data instead of 16", rh.Length)
		}
		r, err := p.AAAAResource()
		return netip.AddrFrom16(r.AAAA).String(), err
	case dnsmessage.TypeCNAME:
		r, err := p.CNAMEResource()
		return formatName(r.CNAME), err
	case dnsmessage.TypeNS:
		r, err := p.NSResource()
		return formatName(r.NS), err
	case dnsmessage.TypePTR:
		r, err := p.PTRResource()
		return formatName(r.PTR), err
	case dnsmessage.TypeMX:
		r, err := p.MXResource()
		return fmt.Sprintf("%d %s", r.Pref, formatName(r.MX)), err
	case dnsmessage.TypeSRV:
		r, err := p.SRVResource()
		return fmt.Sprintf("%d %d %d %s", r.Priority, r.Weight, r.Port, formatName(r.Target)), err
	case dnsmessage.TypeSOA:
		r, err := p.SOAResource()
		return fmt.Sprintf("%s %s %d %d %d %d %d", formatName(r.NS), formatName(r.MBox),
			r.Serial, r.Refresh, r.Retry, r.Expire, r.MinTTL), err
	case dnsmessage.TypeTXT:
		r, err := p.TXTResource()
		quoted := make([]string, len(r.TXT))
		for i, s := range r.TXT {
			quoted[i] = quoteCharString(s)
		}
		return strings.Join(quoted, " "), err
	}
	r, err := p.UnknownResource()
	if err != nil {
		return "", err
	}
	if rh.Type == typeCAA {
		if caa, ok := formatCAA(r.Data); ok {
			return caa, nil
		}
	}
	return formatUnknown(r.Data), nil
}

// formatCAA formats CAA data (RFC 8659): flags, tag and quoted value.
func formatCAA(data []byte) (string, bool) {
	if len(data) < 2 || len(data) < 2+int(data[1]) || data[1] == 0 {
		return "", false
	}
	tag := data[2 : 2+int(data[1])]
	for _, c := range tag {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return "", false
		}
	}
	return fmt.Sprintf("%d %s %s", data[0], tag, quoteCharString(string(data[2+int(data[1]):]))), true
}

// formatUnknown formats data in the generic form of RFC 3597:
// `\# 4 c0000201`.
func formatUnknown(data []byte) string {
	if len(data) == 0 {
		return `\# 0`
	}
	return `\# ` + strconv.Itoa(len(data)) + " " + hex.EncodeToString(data)
}

// formatName returns a domain name in zone-file form: bytes other than
// printable ASCII become \DDD, and the characters that mean something in
// a zone file are escaped with a backslash. The text is printable ASCII.
func formatName(n dnsmessage.Name) string {
	return escape(n.String(), true)
}

// quoteCharString returns a character string (TXT, CAA value) quoted in
// zone-file form: printable ASCII, spaces kept, quotes and backslashes
// escaped.
func quoteCharString(s string) string {
	return `"` + escape(s, false) + `"`
}

// escape returns s with the bytes other than printable ASCII (and the
// space, in a name) as \DDD, and with a backslash before the quote, the
// backslash and, in a name, the other characters special in a zone file.
func escape(s string, name bool) string {
	special := `\"`
	if name {
		special = `\"();@$`
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(special, c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~' || (c == ' ' && name):
			b.Write([]byte{'\\', '0' + c/100, '0' + c/10%10, '0' + c%10})
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
