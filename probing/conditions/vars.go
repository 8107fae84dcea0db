package conditions

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/networkio/webchecker/probing"
)

// The object variables. Their fields are read from the Answer only when
// an expression reads them, at most once per probe.
var (
	responseDef = newObjectDef("response", "webchecker.Response", "the probe has no HTTP response",
		func(s *state) bool { return s.a.HTTP != nil },
		field{name: "code", typ: types.IntType, get: func(s *state) (ref.Val, error) { return types.Int(s.a.HTTP.StatusCode), nil }},
		field{name: "headers", typ: types.NewMapType(types.StringType, types.StringType), get: (*state).headers},
		field{name: "body", typ: types.StringType, get: (*state).body},
		field{name: "json", typ: types.DynType, get: (*state).json, isSet: func(s *state) bool { _, err := s.json(); return err == nil }},
		field{name: "latency", typ: types.DurationType, get: func(s *state) (ref.Val, error) { return types.Duration{Duration: s.a.Latency}, nil }},
	)
	tlsDef = newObjectDef("tls", "webchecker.TLS", "the probe did not use TLS",
		func(s *state) bool { return s.a.TLS != nil },
		field{name: "expiry", typ: types.TimestampType, get: func(s *state) (ref.Val, error) { return types.Timestamp{Time: s.a.TLS.Expiry}, nil }},
		field{name: "version", typ: types.StringType, get: func(s *state) (ref.Val, error) { return text(s.a.TLS.Version), nil }},
		field{name: "subject", typ: types.StringType, get: func(s *state) (ref.Val, error) { return text(s.a.TLS.Subject), nil }},
		field{name: "issuer", typ: types.StringType, get: func(s *state) (ref.Val, error) { return text(s.a.TLS.Issuer), nil }},
		field{name: "dnsNames", typ: types.NewListType(types.StringType), get: func(s *state) (ref.Val, error) { return textList(s.a.TLS.DNSNames), nil }},
	)
	grpcDef = newObjectDef("grpc", "webchecker.GRPC", "the probe has no gRPC health check response",
		func(s *state) bool { return s.a.GRPC != nil },
		field{name: "status", typ: types.StringType, get: func(s *state) (ref.Val, error) { return text(s.a.GRPC.Status), nil }},
	)
	dnsDef = newObjectDef("dns", "webchecker.DNS", "the probe has no DNS response",
		func(s *state) bool { return s.a.DNS != nil },
		field{name: "rcode", typ: types.StringType, get: func(s *state) (ref.Val, error) { return text(s.a.DNS.Rcode), nil }},
		field{name: "answers", typ: types.NewListType(types.StringType), get: func(s *state) (ref.Val, error) { return textList(s.a.DNS.Answers), nil }},
		field{name: "authority", typ: types.NewListType(types.StringType), get: func(s *state) (ref.Val, error) { return textList(s.a.DNS.Authority), nil }},
		field{name: "additional", typ: types.NewListType(types.StringType), get: func(s *state) (ref.Val, error) { return textList(s.a.DNS.Additional), nil }},
	)
	objectDefs = []*objectDef{responseDef, tlsDef, grpcDef, dnsDef}
)

// variable is a variable of the conditions of some kinds.
type variable struct {
	name string
	typ  *types.Type
}

// kindVariables are the variables of each kind's conditions.
var kindVariables = map[probing.Kind][]variable{
	probing.KindHTTP: {{"response", responseDef.typ}, {"tls", tlsDef.typ}},
	probing.KindTCP:  {{"reply", types.StringType}},
	probing.KindTLS:  {{"reply", types.StringType}, {"tls", tlsDef.typ}},
	probing.KindGRPC: {{"grpc", grpcDef.typ}, {"tls", tlsDef.typ}},
	probing.KindDNS:  {{"dns", dnsDef.typ}},
}

// commonVariables are the variables of every kind's conditions.
var commonVariables = []variable{{"latency", types.DurationType}, {"now", types.TimestampType}}

// state is the activation of one Judge call: the variables of the
// answer, built when an expression first reads them and shared by the
// conditions of the call. It is used by one goroutine.
type state struct {
	a   *probing.Answer
	now types.Timestamp
	// objects are the values of the object variables.
	response, tls, grpc, dns object

	headersVal, bodyVal, replyVal, jsonVal ref.Val
	jsonErr                                error
	// jsonParses counts the parses of the body as JSON (tests: one at most).
	jsonParses int
}

var _ interpreter.Activation = (*state)(nil)

func newState(a *probing.Answer, now time.Time) *state {
	s := &state{a: a, now: types.Timestamp{Time: now}}
	s.response, s.tls, s.grpc, s.dns = object{responseDef, s}, object{tlsDef, s}, object{grpcDef, s}, object{dnsDef, s}
	return s
}

// ResolveName implements interpreter.Activation.
func (s *state) ResolveName(name string) (any, bool) {
	switch name {
	case "latency":
		return types.Duration{Duration: s.a.Latency}, true
	case "now":
		return s.now, true
	case "response":
		return &s.response, true
	case "tls":
		return &s.tls, true
	case "grpc":
		return &s.grpc, true
	case "dns":
		return &s.dns, true
	case "reply":
		if s.replyVal == nil {
			var reply []byte
			if s.a.TCP != nil {
				reply = s.a.TCP.Reply
			}
			s.replyVal = text(string(reply))
		}
		return s.replyVal, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (s *state) Parent() interpreter.Activation { return nil }

func (s *state) headers() (ref.Val, error) {
	if s.headersVal == nil {
		m := make(map[string]string, len(s.a.HTTP.Header))
		for name, values := range s.a.HTTP.Header {
			key := strings.ToLower(name)
			joined := validUTF8(strings.Join(values, ", "))
			if prev, ok := m[key]; ok { // names that differ only in case
				joined = prev + ", " + joined
			}
			m[key] = joined
		}
		s.headersVal = valueAdapter{}.NativeToValue(m)
	}
	return s.headersVal, nil
}

func (s *state) body() (ref.Val, error) {
	if s.bodyVal == nil {
		s.bodyVal = text(string(s.a.HTTP.Body))
	}
	return s.bodyVal, nil
}

// json parses the body as JSON, once.
func (s *state) json() (ref.Val, error) {
	if s.jsonVal == nil && s.jsonErr == nil {
		s.jsonParses++
		s.jsonVal, s.jsonErr = parseJSON(s.a.HTTP.Body)
	}
	return s.jsonVal, s.jsonErr
}

// text is s as a CEL string: valid UTF-8, invalid bytes replaced.
func text(s string) ref.Val { return types.String(validUTF8(s)) }

func textList(l []string) ref.Val {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = validUTF8(s)
	}
	return types.NewStringList(types.DefaultTypeAdapter, out)
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, string(utf8.RuneError))
}
