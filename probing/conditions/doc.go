// Package conditions compiles a WebChecker's spec.conditions, CEL
// expressions over a probe's answer, into a probing.Judge.
//
// # Variables
//
// Each probe kind has its own typed environment. Every kind has
//
//	latency   duration   how long the probe took until its answer was complete
//	now       timestamp  the time of the evaluation (the same for every condition of a probe)
//
// and, by kind:
//
//	http   response.code      int                  the final status code
//	       response.headers   map(string, string)  lower-case names; the values of a name joined with ", "
//	       response.body      string               the body, as much as the prober read (see below)
//	       response.json      dyn                  the body parsed as JSON
//	       response.latency   duration             latency again
//	       tls.*                                   see below (set over https only)
//	tcp    reply              string               what the server sent, up to the read limit ("" for none)
//	tls    reply, tls.*
//	grpc   grpc.status        string               SERVING, NOT_SERVING, SERVICE_UNKNOWN or UNKNOWN
//	       tls.*                                   (set over grpcs only)
//	dns    dns.rcode          string               NOERROR, NXDOMAIN, SERVFAIL, ...
//	       dns.answers, dns.authority, dns.additional
//	                          list(string)         the records of each section, in zone-file form
//
//	tls.expiry    timestamp     the expiry of the served chain (what Result.CertificateExpiry reports)
//	tls.version   string        "1.0", "1.1", "1.2" or "1.3"
//	tls.subject, tls.issuer
//	              string        the leaf certificate's, in RFC 2253 form
//	tls.dnsNames  list(string)  the leaf certificate's DNS names
//
// A variable of another kind (dns.rcode in an http condition) does not
// compile, with a message that says which kinds have it. The checker
// accepts tls.* in every http and grpc condition, since the scheme (https,
// grpcs) decides whether there is TLS; over plain http or grpc the fields
// of tls are not set: has(tls.expiry) is false, and reading tls.expiry
// makes the condition fail with "tls.expiry is not set: the probe did not
// use TLS". A condition for both writes
// !has(tls.expiry) || tls.expiry - now > duration("336h").
//
// Strings are valid UTF-8: invalid bytes of a body, header or reply read
// as U+FFFD. Only the bytes the prober read are there: the HTTP prober
// keeps at most its body limit (or spec.bodyMatch's maxBytes), and keeps
// the body at all only for a Judge whose NeedsBody is true, that is when
// an expression names response.body, response.json, reply, or response
// as a whole. NeedsBody is decided from the parsed expression (the
// identifiers not bound by a comprehension), not by searching its text.
//
// # JSON
//
// response.json is the body parsed with encoding/json, when an expression
// of the probe first reads it, and once per probe whatever the number of
// conditions reading it. Objects are maps with string keys, arrays lists,
// strings strings, true and false bools, null null, and numbers doubles
// (integers above 2^53 lose precision). Comparing a double with an int
// works as in arithmetic (CEL's heterogeneous equality, and cross-type
// numeric comparisons, which the environments enable):
// response.json.count == 3 and response.json.count > 2 hold for
// {"count": 3}. Arithmetic does not mix them: response.json.count + 1
// cannot be evaluated ("no such overload"), int(response.json.count) + 1
// or response.json.count + 1.0 can. A missing key makes the condition fail
// ("no such key"); has(response.json.status) and
// response.json.?status.orValue("") test for it. A body that is not JSON
// makes every condition reading response.json fail with "response body is
// not JSON" (has(response.json) is false). A body whose decoded value
// could take more than MaxJSONMemory (16 MiB, 16 times the largest body
// limit) is not decoded, and fails alike ("response body is too large a
// JSON value"): the memory is estimated before decoding, from above
// (decoded, JSON takes up to 67 bytes per byte for nested objects, about 8
// for typical API responses).
//
// # Language
//
// The environments have CEL's standard library, optional types
// (x.?field, optional.of), the strings extension (lowerAscii, split,
// trim, indexOf, replace, join, ...), cel.bind, two-variable
// comprehensions (m.all(k, v, ...)), cross-type numeric comparisons and
// UTC as the default time zone. Not there: format() (its result can be
// far larger than its arguments), the lists and sets extensions
// (lists.range allocates, sets.contains and distinct take quadratic
// time), and the encoders. An expression must type-check to bool: one
// whose type is dyn (response.json.ok) does not compile; compare it
// (response.json.ok == true).
//
// # Evaluation and limits
//
// The conditions are evaluated in order; the first false one decides the
// message: its Message, or "condition N failed: <expression>" (N counts
// from 1). One that cannot be evaluated (a missing key, a type error on
// dyn, a limit below) fails with "condition N ("<expression>") could not
// be evaluated: <reason>", where the reason is a fixed text of the error's
// kind ("no such key", "index out of range", "invalid conversion",
// "division by zero", "integer overflow", the cost limit, ...): CEL's own
// texts quote the values at fault, which come from what the target sent,
// and status and Events are readable by everyone with view. Messages
// depend only on the conditions and the answer, so that an unchanged
// failure writes nothing.
//
// An expression is bounded in size (MaxExpressionBytes), and so is its
// evaluation, which runs in the operator for every probe of a target
// whose conditions any user who may write a WebChecker chooses:
//
//   - Cost: every condition's evaluation stops past MaxCost (1e6, the
//     per-expression limit of Kubernetes' validation rules), in CEL's cost
//     units (about one per operation, one per ten bytes a string function
//     scans, and for matches() one per ten steps of its worst case, program
//     size × string length: CEL's default charges the pattern's length).
//     The cost is checked after each call, so one condition's matches take
//     at most 2 × MaxRegexSteps steps.
//   - Time: all the conditions of a probe get MaxEvaluationTime. cel-go's
//     runtime cost tracking takes time quadratic in the iterations of a
//     comprehension (about 1s for 20,000 iterations on this project's
//     machines), long before the cost limit stops it: the context of the
//     evaluation, checked every 100 iterations, ends at that deadline, or
//     with the caller's context. This is wall-clock time, generous so that
//     only a runaway comprehension (or a process starved of CPU that long)
//     meets it. Both deadlines are checked before each condition too: a
//     condition without a comprehension is never started past them.
//   - Size: CEL checks the cost after each function call, so a call whose
//     result or time is far larger than its arguments is guarded before it
//     runs: replace and join refuse to build a string over MaxStringBytes;
//     matches refuses a pattern whose program is over MaxRegexProgramSize
//     instructions (pattern.MaxProgramSize, the bound of every regular
//     expression of a WebChecker: at compile time for a literal pattern,
//     and the condition's error then unwraps to pattern.ErrTooComplex), and
//     a match of more than MaxRegexSteps steps (string bytes times program
//     size);
//     indexOf and lastIndexOf search in linear time (the extension's take
//     len(s) × len(sub)).
//
// The static cost estimate (the checker's, which Kubernetes bounds) is
// not used: it needs the largest size of every value, and the shape of a
// JSON body is unknown, so any condition iterating over a JSON array
// nested in another would be refused, while the limits above bound what
// an evaluation actually spends.
//
// A Judge is immutable and safe for concurrent use; Compile builds the
// environments once per process.
package conditions
