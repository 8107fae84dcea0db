package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of a WebChecker.
//
// The Ready condition says whether the server answers as expected. Its
// reason is Pending before the first result, ProbeSucceeded while it is
// True, and otherwise the failure class of the probing package: DNSFailed,
// ConnectionFailed, Timeout, TLSError, EgressDenied, ProxyFailed,
// ConditionFailed or InvalidTarget for a probe of any kind, and those of
// one kind (UnexpectedStatus, TooManyRedirects and BodyMismatch for http;
// UnexpectedReply for tcp and tls; NotServing, ServiceUnknown,
// ServingStatusUnknown and GRPCError for grpc; UnexpectedRcode and
// AnswerMismatch for dns); SecretUnavailable or SecretAccessDisabled when
// the checker cannot be probed with the Secrets it refers to,
// InvalidCondition when a condition does not compile, and RegexTooComplex
// when a regular expression is over the operator's bounds. A certificate that expires soon
// does not make it False (see ConditionCertificateValid); one that has
// expired or is not trusted fails the TLS handshake, and so Ready
// (TLSError).
//
// The CertificateValid condition says whether the certificate chain the
// server presented in the latest probe is valid for longer than
// spec.tls.certExpiryWarning: True (Valid), False (ExpiringSoon, or Expired
// when verification is skipped), or Unknown when the latest probe saw no
// certificate (NotApplicable for a probe without TLS, NoCertificate when a
// probe over TLS received no TLS response).
//
// The Reconciling condition is True (reason AwaitingResult) while the
// status holds no result of the checker's current generation yet: before
// its first result (Ready Pending), or, with several vantage points, while
// no majority of the current generation's entries has decided. It is
// removed in the write that records the result. It is the signal kstatus
// (and so Flux and kpt) reads as InProgress; a status whose
// observedGeneration is behind the spec says the same on its own.
const (
	// ConditionReady is True while the server answers as expected (with an
	// accepted status code, and body when a bodyMatch is given), False
	// while it does not, Unknown before the first result.
	ConditionReady = "Ready"
	// ReasonPending is the Ready reason while the first probe result is
	// awaited (written once it has not come within a short grace).
	ReasonPending = "Pending"
	// ReasonSuspended is the Ready reason (status Unknown) while
	// spec.suspend is true: the checker is not probed.
	ReasonSuspended = "Suspended"
	// ReasonRegexTooComplex is the Ready reason (status False) of a
	// checker whose regular expression (spec.bodyMatch.regex,
	// spec.tcp.expect, spec.dns.answerMatch[i], or a pattern of matches()
	// in spec.conditions) compiles to a program of more than 2000
	// instructions, or whose program size times the bytes it may be
	// matched on (maxBodyBytes, maxReplyBytes) is over 2^25 steps: the
	// checker is not probed until the spec changes, and the message names
	// the field and the limit.
	ReasonRegexTooComplex = "RegexTooComplex"

	// ConditionReconciling is True while the status holds no result of
	// the current generation; it is removed once it does.
	ConditionReconciling = "Reconciling"
	// ReasonAwaitingResult is the Reconciling reason (status True): the
	// result of the current generation is awaited.
	ReasonAwaitingResult = "AwaitingResult"

	// ConditionCertificateValid is True while the served certificate chain
	// is valid for longer than the warning period.
	ConditionCertificateValid = "CertificateValid"
	// ReasonCertificateValid: the chain is valid beyond the warning period
	// (status True).
	ReasonCertificateValid = "Valid"
	// ReasonCertificateExpiringSoon: the chain expires within the warning
	// period (status False).
	ReasonCertificateExpiringSoon = "ExpiringSoon"
	// ReasonCertificateExpired: the chain has expired; only a probe that
	// skips verification gets an answer from such a server, the others
	// fail with TLSError (status False).
	ReasonCertificateExpired = "Expired"
	// ReasonCertificateNotVerified: the chain the server presented failed
	// verification for another reason than its validity period (an
	// unknown authority, a name it is not valid for, ...; status False;
	// Ready says why).
	ReasonCertificateNotVerified = "NotVerified"
	// ReasonCertificateNotApplicable: the latest probe used no TLS (plain
	// http, tcp, grpc or dns; status Unknown).
	ReasonCertificateNotApplicable = "NotApplicable"
	// ReasonNoCertificate: the latest probe over TLS (https, tls, grpcs)
	// received no TLS response,
	// for example because the connection or the handshake failed (status
	// Unknown; Ready says why).
	ReasonNoCertificate = "NoCertificate"
)

// MaxSpecText is how many characters the free text of a WebCheckerSpec
// holds at most, all its fields together (see WebCheckerSpec).
const MaxSpecText = 32768

// WebCheckerSpec describes the server to probe and how.
//
// The free text of a spec is bounded as a whole, not only field by field:
// the header names and values, the body, the conditions' expressions and
// messages, tcp.send, tcp.expect, bodyMatch.regex and dns.answerMatch
// together hold at most 32768 characters (MaxSpecText; at most 128 KiB of
// UTF-8), where their per-field limits alone would allow about 320,000.
//
// +kubebuilder:validation:XValidation:rule="!has(self.body) || (has(self.method) && self.method in ['POST', 'PUT'])",message="body requires method POST or PUT"
// +kubebuilder:validation:XValidation:rule="!has(self.bodyMatch) || !has(self.method) || self.method != 'HEAD'",message="bodyMatch cannot be used with method HEAD: a HEAD response has no body"
// +kubebuilder:validation:XValidation:rule="!(has(self.basicAuthSecretRef) && has(self.bearerTokenSecretRef))",message="basicAuthSecretRef and bearerTokenSecretRef are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!(has(self.basicAuthSecretRef) || has(self.bearerTokenSecretRef)) || !has(self.headers) || !self.headers.exists(h, h.name.lowerAscii() == 'authorization')",message="an Authorization header cannot be combined with basicAuthSecretRef or bearerTokenSecretRef"
// +kubebuilder:validation:XValidation:rule="!self.host.contains('://') || self.host.startsWith('http://') || self.host.startsWith('https://') || !(has(self.path) || has(self.method) || has(self.headers) || has(self.body) || has(self.bodyMatch) || has(self.basicAuthSecretRef) || has(self.bearerTokenSecretRef) || has(self.expectedStatusCodes) || has(self.followRedirects) || has(self.reuseConnections))",messageExpression="(has(self.path) ? 'path is' : has(self.method) ? 'method is' : has(self.headers) ? 'headers are' : has(self.body) ? 'body is' : has(self.bodyMatch) ? 'bodyMatch is' : has(self.basicAuthSecretRef) ? 'basicAuthSecretRef is' : has(self.bearerTokenSecretRef) ? 'bearerTokenSecretRef is' : has(self.expectedStatusCodes) ? 'expectedStatusCodes is' : has(self.followRedirects) ? 'followRedirects is' : 'reuseConnections is') + ' only for http and https targets'"
// +kubebuilder:validation:XValidation:rule="!has(self.oauth2) || ((!self.host.contains('://') || self.host.startsWith('http://') || self.host.startsWith('https://')) && !has(self.basicAuthSecretRef) && !has(self.bearerTokenSecretRef) && (!has(self.headers) || !self.headers.exists(h, h.name.lowerAscii() == 'authorization')))",message="oauth2 is only for http and https targets, and not with basicAuthSecretRef, bearerTokenSecretRef or an Authorization header"
// +kubebuilder:validation:XValidation:rule="(!has(self.tls) || self.host.startsWith('https://') || self.host.startsWith('tls://') || self.host.startsWith('grpcs://')) && (!has(self.tcp) || self.host.startsWith('tcp://') || self.host.startsWith('tls://')) && (!has(self.grpc) || self.host.startsWith('grpc://') || self.host.startsWith('grpcs://')) && (has(self.dns) == self.host.startsWith('dns://')) && (!has(self.proxy) || !self.host.startsWith('dns://'))",messageExpression="!(!has(self.tls) || self.host.startsWith('https://') || self.host.startsWith('tls://') || self.host.startsWith('grpcs://')) ? 'tls is only for https, tls and grpcs targets' : !(!has(self.tcp) || self.host.startsWith('tcp://') || self.host.startsWith('tls://')) ? 'tcp is only for tcp and tls targets' : !(!has(self.grpc) || self.host.startsWith('grpc://') || self.host.startsWith('grpcs://')) ? 'grpc is only for grpc and grpcs targets' : !(has(self.dns) == self.host.startsWith('dns://')) ? (has(self.dns) ? 'dns is only for dns targets' : 'a dns target needs dns (at least dns.name)') : 'a dns target cannot use a proxy'"
// +kubebuilder:validation:XValidation:rule="!has(self.addresses) || self.addresses == 'First' || !has(self.proxy)",message="addresses Any, All and Majority cannot be used with a proxy: the proxy resolves the name"
// +kubebuilder:validation:XValidation:rule="!has(self.addresses) || self.addresses == 'First' || !has(self.reuseConnections) || !self.reuseConnections",message="addresses Any, All and Majority cannot be used with reuseConnections: a kept connection goes to one address"
// +kubebuilder:validation:XValidation:rule="!self.timeout.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || !self.interval.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self.timeout) < duration(self.interval)",message="timeout must be less than interval"
// +kubebuilder:validation:XValidation:rule="!has(self.failureWindow) || ((!has(self.failureThreshold) || self.failureThreshold == 1) && (!has(self.successThreshold) || self.successThreshold == 1))",message="failureWindow decides both ways: failureThreshold and successThreshold must be 1 (their default) with it"
// +kubebuilder:validation:XValidation:rule="(has(self.headers) ? self.headers.map(h, h.name.size() + (has(h.value) ? h.value.size() : 0)).sum() : 0) + (has(self.body) ? self.body.size() : 0) + (has(self.conditions) ? self.conditions.map(c, c.expression.size() + (has(c.message) ? c.message.size() : 0)).sum() : 0) + (has(self.tcp) && has(self.tcp.send) ? self.tcp.send.size() : 0) + (has(self.tcp) && has(self.tcp.expect) ? self.tcp.expect.size() : 0) + (has(self.bodyMatch) ? self.bodyMatch.regex.size() : 0) + (has(self.dns) && has(self.dns.answerMatch) ? self.dns.answerMatch.map(a, a.size()).sum() : 0) <= 32768",message="the spec's headers, body, conditions, tcp.send, tcp.expect, bodyMatch.regex and dns.answerMatch together must be at most 32768 characters"
type WebCheckerSpec struct {
	// Host is the server to probe; its scheme chooses the kind of probe:
	// http://host[:port], https://host[:port] or a bare host[:port]
	// (meaning http) request path over HTTP; tcp://host:port connects;
	// tls://host:port connects and shakes hands; grpc://host:port and
	// grpcs://host:port call the standard gRPC health check;
	// dns://server[:port] (port 53 by default) queries that DNS server
	// (see dns). It carries no path, query or fragment; use path for
	// those.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('://') || self.matches('^(https?|tcp|tls|grpcs?|dns)://')",message="host must use one of the schemes http, https, tcp, tls, grpc, grpcs or dns (or no scheme, meaning http)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(tcp|tls|grpcs?)://') || !isURL(self) || url(self).getPort() != ''",message="a tcp, tls, grpc or grpcs host needs a port, such as tcp://db.example.com:5432"
	// +kubebuilder:validation:XValidation:rule="!self.contains('?') && !self.contains('#')",message="host must not contain a query or fragment; put them in path"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="host must not contain credentials"
	// +kubebuilder:validation:XValidation:rule="isURL(self.contains('://') ? self : 'http://' + self) && url(self.contains('://') ? self : 'http://' + self).getHostname() != ''",message="host must be a valid URL such as https://example.com:8443 or example.com"
	// +kubebuilder:validation:XValidation:rule="!isURL(self.contains('://') ? self : 'http://' + self) || url(self.contains('://') ? self : 'http://' + self).getEscapedPath() in ['', '/']",message="host must not contain a path; use path"
	Host string `json:"host"`

	// Path is the request path of an http or https probe, with an
	// optional query. It must start with a single /. Default /.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/') && !self.startsWith('//')",message="path must start with a single /"
	// +kubebuilder:validation:XValidation:rule="!self.contains('#')",message="path must not contain a fragment"
	Path string `json:"path,omitempty"`

	// Interval is the time between two probes, at least 1s.
	//
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) >= duration('1s')",message="interval must be at least 1s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) <= duration('24h')",message="interval must be at most 24h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Timeout bounds one probe (connect, TLS, request and response). It
	// must be positive, at most 60s (MaxTimeout) and less than interval.
	//
	// +optional
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="timeout must be positive"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) <= duration('60s')",message="timeout must be at most 60s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Method is the HTTP method: GET, HEAD, POST, PUT or OPTIONS. Default
	// GET.
	//
	// +optional
	// +kubebuilder:validation:Enum=GET;HEAD;POST;PUT;OPTIONS
	Method string `json:"method,omitempty"`

	// Headers are added to every probe request. Names are unique (ignoring
	// case); hop-by-hop headers and Content-Length are set by the prober and
	// cannot be given. A Host header sets the request's host. Names and
	// values count in the spec's bound of 32768 characters (MaxSpecText).
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(h, self.filter(o, o.name.lowerAscii() == h.name.lowerAscii()).size() == 1)",message="header names must be unique, ignoring case"
	Headers []HTTPHeader `json:"headers,omitempty"`

	// Body is the request body of a POST or PUT probe. It counts in the
	// spec's bound of 32768 characters (MaxSpecText).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	Body string `json:"body,omitempty"`

	// BodyMatch is a regular expression that the response body must match
	// (or, inverted, must not match).
	//
	// +optional
	BodyMatch *BodyMatch `json:"bodyMatch,omitempty"`

	// TLS configures the TLS client of https, tls and grpcs probes (and of
	// https redirect targets).
	//
	// +optional
	TLS *TLSOptions `json:"tls,omitempty"`

	// BasicAuthSecretRef names a Secret in the checker's namespace whose
	// "username" and "password" keys (as in a kubernetes.io/basic-auth
	// Secret) are sent as HTTP basic authentication.
	//
	// +optional
	BasicAuthSecretRef *SecretReference `json:"basicAuthSecretRef,omitempty"`

	// BearerTokenSecretRef names a Secret key in the checker's namespace
	// whose value is sent as "Authorization: Bearer <value>".
	//
	// +optional
	BearerTokenSecretRef *SecretKeySelector `json:"bearerTokenSecretRef,omitempty"`

	// OAuth2 fetches the bearer token of the probes with the OAuth 2.0
	// client credentials grant (RFC 6749, section 4.4), through the same
	// egress policy, proxy and DNS server as the probes, and keeps it
	// until shortly before it expires.
	//
	// +optional
	OAuth2 *OAuth2 `json:"oauth2,omitempty"`

	// IPFamily selects the addresses the probe connects to: IPv4 only, IPv6
	// only, or Any (both, IPv6 first where the host has both).
	//
	// +optional
	// +kubebuilder:default=Any
	// +kubebuilder:validation:Enum=IPv4;IPv6;Any
	IPFamily IPFamily `json:"ipFamily,omitempty"`

	// DNSServer is the DNS server that resolves this checker's names (its
	// host, a dns checker's server, a proxy's host, redirect targets)
	// instead of the operator's --dns-server: an IP address, with a port
	// or without (53), such as 10.96.0.10, 10.96.0.10:5353 or
	// [2001:db8::53]:53. The egress policy judges it as it judges
	// targets: a server it denies fails every probe with reason
	// EgressDenied.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isIP(self) || (self.matches(r'^(\\[[0-9A-Fa-f:.]+\\]|[0-9.]+):[0-9]{1,5}$') && isIP(self.startsWith('[') ? self.substring(1, self.lastIndexOf(']')) : self.substring(0, self.lastIndexOf(':'))) && int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535)",message="dnsServer must be an IP address with an optional port, such as 10.96.0.10, 10.96.0.10:5353 or [2001:db8::53]:53"
	DNSServer string `json:"dnsServer,omitempty"`

	// Addresses says which addresses of the host's name a probe connects
	// to. First (the default) connects as a client does: the addresses are
	// tried in turn and the first that answers decides, so a dead address
	// hides behind a live one. Any, All and Majority probe every address
	// (A and AAAA records of spec.ipFamily, at most 16, the lowest first)
	// at once within spec.timeout, each judged by the egress policy, and
	// succeed when one of them, all of them or more than half of them
	// succeed; status.addresses holds each address's result and the Ready
	// message names the failing ones. Not with a proxy (which resolves the
	// name itself) nor with reuseConnections.
	//
	// +optional
	// +kubebuilder:default=First
	// +kubebuilder:validation:Enum=First;Any;All;Majority
	Addresses AddressMode `json:"addresses,omitempty"`

	// Suspend stops probing the checker while true: no probes are sent, no
	// per-checker metrics are exported, and Ready is Unknown with reason
	// Suspended. Setting it back to false resumes probing at once.
	//
	// +optional
	// +kubebuilder:default=false
	Suspend *bool `json:"suspend,omitempty"`

	// DependsOn names WebCheckers of the same namespace this one depends
	// on, such as the router or the identity provider in front of it:
	// while one of them is down (Ready False), a failure of this checker
	// reads reason DependencyDown, naming it, and the shipped alerts do
	// not page for this one. Its own probes go on. A dependency that does
	// not exist, or that depends back on this checker (a cycle through at
	// most 32 checkers), makes Ready False with reason
	// InvalidDependency, and this checker is not probed until that is
	// fixed. At most 8 names.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	DependsOn []string `json:"dependsOn,omitempty"`

	// MaintenanceWindows are times during which this checker's failures
	// are expected (see MaintenanceWindow); the WebCheckerMaintenance
	// objects of its namespace that select it add theirs. While one is
	// open the checker is probed as usual, its Maintenance condition is
	// True, and the shipped alerts and error budget rules leave it out.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`

	// ReuseConnections keeps connections alive between probes, for
	// high-frequency checks where only the HTTP answer matters. A probe
	// then sends its request over a connection an earlier probe opened,
	// without resolving the name, connecting or shaking hands: it does not
	// see a changed DNS answer, a closed listener or a renewed certificate
	// while the old connection lasts. False (the default) gives every probe
	// a connection of its own.
	//
	// +optional
	ReuseConnections bool `json:"reuseConnections,omitempty"`

	// ExpectedStatusCodes lists the final status codes that count as
	// success. When empty, any 2xx or 3xx code is success.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Minimum=100
	// +kubebuilder:validation:items:Maximum=599
	ExpectedStatusCodes []int32 `json:"expectedStatusCodes,omitempty"`

	// FollowRedirects makes the probe follow redirects (at most 10) and
	// judge the final response. When false, a redirect response is judged
	// itself. Default true. Once a redirect leaves the target's origin
	// (another scheme, http to https included, host or port), no request
	// after it carries credentials: no basic auth, bearer token, header
	// from a Secret, nor Authorization or Cookie header.
	//
	// +optional
	FollowRedirects *bool `json:"followRedirects,omitempty"`

	// FailureThreshold is how many consecutive failed probes turn Ready
	// from True to False, as a kubelet probe's failureThreshold: fewer
	// failures among successes change nothing. Before the first result
	// (Pending) the first probe decides. Between 1 and 20.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`

	// SuccessThreshold is how many consecutive successful probes turn
	// Ready from False to True, as a kubelet probe's successThreshold.
	// Before the first result (Pending) the first probe decides. Between 1
	// and 20.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	SuccessThreshold *int32 `json:"successThreshold,omitempty"`

	// FailureWindow judges the checker by its recent probes instead of
	// consecutive ones, as Cloudprober's {failures, total}: Ready turns
	// False once at least failureWindow.failures of the last
	// failureWindow.probes probes failed, and True again once the window
	// is healthy, fewer than failures of the last probes failed: once
	// probes - failures + 1 of them succeeded. A server that fails one
	// probe in three never trips failureThreshold 2, but trips a window of
	// 2 of 6. Only probes made since the checker's spec last changed, by
	// the replica that probes it now, count: a replica that takes a
	// checker over keeps the stored condition until its own probes decide.
	// The window decides both ways, so failureThreshold and
	// successThreshold must stay 1 (their default) with it. Before the
	// first result (Pending) the first probe decides.
	//
	// +optional
	FailureWindow *FailureWindow `json:"failureWindow,omitempty"`

	// TCP is what a tcp or tls probe sends and the reply it expects.
	//
	// +optional
	TCP *TCPProbe `json:"tcp,omitempty"`

	// GRPC is the health check of a grpc or grpcs probe.
	//
	// +optional
	GRPC *GRPCProbe `json:"grpc,omitempty"`

	// DNS is the query of a dns probe (required for dns:// hosts).
	//
	// +optional
	DNS *DNSProbe `json:"dns,omitempty"`

	// Conditions are CEL expressions over the probe's answer, all of which
	// must hold for the probe to succeed, checked in order after the
	// kind's own checks (status code, body match, reply, serving status,
	// rcode): for example response.json.status == "ok" or
	// tls.expiry - now > duration("336h"). The README lists the variables
	// of each kind. An expression that does not compile turns Ready False
	// (reason InvalidCondition) with the compiler's message. Expressions
	// and messages count in the spec's bound of 32768 characters
	// (MaxSpecText).
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Conditions []ResponseCondition `json:"conditions,omitempty"`

	// VantagePoints is how many operator replicas probe the checker, each
	// from a different zone where the replicas' zones allow (see the
	// README's "Quorum probing"). With 1 (the default) the replica that
	// owns the checker probes it alone and Ready follows its probes. With
	// more, every vantage point reports its own state (after the
	// thresholds) in status.vantagePoints, and Ready is True while a
	// majority of them are True, False while a majority are False, and
	// otherwise keeps its value. With fewer live replicas than asked for,
	// every replica probes the checker and the Ready message says so.
	// Between 1 and 5; each vantage point costs the target one probe per
	// interval.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	VantagePoints *int32 `json:"vantagePoints,omitempty"`

	// Proxy sends every connection of the probe through an HTTP proxy
	// (CONNECT, or absolute-form requests for http), instead of the
	// operator's default (--proxy-url). The operator's egress policy then
	// judges the proxy's address. dns probes cannot use a proxy.
	//
	// +optional
	Proxy *ProxySpec `json:"proxy,omitempty"`
}

// FailureWindow is a failure window: how many of a checker's latest probes
// may fail before Ready turns False (see WebCheckerSpec.FailureWindow).
//
// +kubebuilder:validation:XValidation:rule="self.failures <= self.probes",message="failureWindow.failures must be at most failureWindow.probes"
type FailureWindow struct {
	// Failures is how many of the window's probes must fail to turn Ready
	// False. Between 1 and probes.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Failures int32 `json:"failures"`

	// Probes is how many of the latest probes the window holds. Between 1
	// and 64.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Probes int32 `json:"probes"`
}

// IPFamily is the address family a probe connects over.
type IPFamily string

// IP family preferences.
const (
	IPFamilyIPv4 IPFamily = "IPv4"
	IPFamilyIPv6 IPFamily = "IPv6"
	IPFamilyAny  IPFamily = "Any"
)

// AddressMode says which addresses of a checker's host name its probes
// connect to, and how their results make the verdict.
type AddressMode string

// Address modes.
const (
	AddressesFirst    AddressMode = "First"
	AddressesAny      AddressMode = "Any"
	AddressesAll      AddressMode = "All"
	AddressesMajority AddressMode = "Majority"
)

// MaxAddresses is how many addresses of a name a checker probes at most
// (the length of status.addresses).
const MaxAddresses = 16

// HTTPHeader is one request header, with a literal value or a value read
// from a Secret.
//
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueFrom)",message="a header needs exactly one of value or valueFrom"
type HTTPHeader struct {
	// Name is the header name, an HTTP token such as X-Api-Key.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[-!#$%&'*+.^_|~0-9A-Za-z]+$`
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['connection', 'content-length', 'keep-alive', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'])",message="this header is set by the prober and cannot be given"
	Name string `json:"name"`

	// Value is the literal header value.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	// +kubebuilder:validation:XValidation:rule="!self.matches('[\\x00-\\x08\\x0a-\\x1f\\x7f]')",message="header values must not contain control characters such as CR or LF"
	Value string `json:"value,omitempty"`

	// ValueFrom reads the header value from a Secret in the checker's
	// namespace. The value is never logged or written to the status.
	//
	// +optional
	ValueFrom *HeaderValueSource `json:"valueFrom,omitempty"`
}

// HeaderValueSource is where a header value comes from.
type HeaderValueSource struct {
	// SecretKeyRef selects a key of a Secret in the checker's namespace.
	//
	// +required
	SecretKeyRef SecretKeySelector `json:"secretKeyRef"`
}

// SecretReference names a Secret in the checker's namespace.
type SecretReference struct {
	// Name is the Secret's name.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// OAuth2 is the client credentials grant of a checker.
type OAuth2 struct {
	// TokenURL is the token endpoint, an http or https URL without
	// credentials. It is verified with tls.caSecretRef's CA bundle when
	// the checker has one (the system roots otherwise), never skipped.
	//
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/?#@\s]+([/?][^#\s]*)?$`
	TokenURL string `json:"tokenURL"`

	// CredentialsSecretRef names a Secret in the checker's namespace with
	// the keys client-id and client-secret, sent to the token endpoint as
	// HTTP basic authentication.
	//
	// +required
	CredentialsSecretRef SecretReference `json:"credentialsSecretRef"`

	// Scopes are the scopes asked for; none asks for the endpoint's
	// default.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Scopes []OAuth2Scope `json:"scopes,omitempty"`
}

// OAuth2Scope is a scope token (RFC 6749, section 3.3).
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=128
// +kubebuilder:validation:Pattern=`^[!#-\[\]-~]+$`
type OAuth2Scope string

// OAuth2 Secret keys: the client's id and secret.
const (
	OAuth2ClientIDKey     = "client-id"
	OAuth2ClientSecretKey = "client-secret"
)

// SecretKeySelector selects one key of a Secret in the checker's namespace.
type SecretKeySelector struct {
	// Name is the Secret's name.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key is the key within the Secret's data.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// BodyMatch checks the response body with a regular expression.
type BodyMatch struct {
	// Regex is an RE2 regular expression (Go syntax) searched for in the
	// first maxBodyBytes of the response body. Its compiled program may
	// have at most 2000 instructions, and its size times maxBodyBytes at
	// most 2^25 (33,554,432): a matching step per instruction per byte,
	// the worst case. Otherwise Ready is False with reason RegexTooComplex.
	// The API server refuses a repeat count over 99, counts over 1000 in
	// all, a count over 9 for a group ((...){10}), and, in a pattern over
	// 32 bytes, a group's count with other counts or over 256 bytes, before
	// compiling it in its own check (write a literal { as [{]).
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.matches('[{]([0-9]*,)?[0-9]{3,}') && !self.matches('[)][{]([0-9]*,)?[0-9]{2,}') && self.findAll('[{,][0-9]{1,2}').map(m, int(m.substring(1))).sum() <= 1000 && (!self.matches('[)][{]') || size(self) <= 32 || (size(self) <= 256 && self.findAll('[{][0-9]').size() == self.findAll('[)][{][0-9]').size()))",message="regex's repeat counts must be at most 99 and 1000 in all, and a group's at most 9 (over 32 bytes, a pattern with a group's count has no other, and at most 256 bytes), so that the API server's own check compiles a small program (write a literal { as [{])"
	// +kubebuilder:validation:XValidation:rule="self.matches('[{]([0-9]*,)?[0-9]{3,}') || self.matches('[)][{]([0-9]*,)?[0-9]{2,}') || self.findAll('[{,][0-9]{1,2}').map(m, int(m.substring(1))).sum() > 1000 || !(!self.matches('[)][{]') || size(self) <= 32 || (size(self) <= 256 && self.findAll('[{][0-9]').size() == self.findAll('[)][{][0-9]').size())) || type(''.matches(self)) == bool",message="regex must be a valid RE2 regular expression"
	Regex string `json:"regex"`

	// Invert makes a match a failure: the body must not match regex.
	//
	// +optional
	Invert bool `json:"invert,omitempty"`

	// MaxBodyBytes is how much of the response body is searched, at most
	// 1 MiB.
	//
	// +optional
	// +kubebuilder:default=65536
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxBodyBytes *int64 `json:"maxBodyBytes,omitempty"`
}

// TLSOptions configure the TLS client of https probes.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.insecureSkipVerify) && self.insecureSkipVerify && has(self.caSecretRef))",message="caSecretRef has no effect with insecureSkipVerify; set only one"
type TLSOptions struct {
	// InsecureSkipVerify accepts any certificate the server presents. The
	// certificate's expiry is still reported and checked.
	//
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`

	// ServerName is the name sent in the TLS handshake (SNI) and verified
	// against the certificate, instead of the host's name.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9*]([-A-Za-z0-9.]*[A-Za-z0-9])?$`
	ServerName string `json:"serverName,omitempty"`

	// CASecretRef selects a Secret key in the checker's namespace holding
	// PEM-encoded CA certificates that replace the system roots.
	//
	// +optional
	CASecretRef *SecretKeySelector `json:"caSecretRef,omitempty"`

	// ClientCertSecretRef names a Secret in the checker's namespace of type
	// kubernetes.io/tls (keys tls.crt: the certificate and its
	// intermediates, tls.key: its private key) presented when the server
	// asks for a client certificate (mutual TLS). Its expiry is reported
	// (webchecker_probe_client_cert_expiry) and warned of as the server's
	// is (CertificateValid, certExpiryWarning).
	//
	// +optional
	ClientCertSecretRef *SecretReference `json:"clientCertSecretRef,omitempty"`

	// MinVersion is the lowest TLS version accepted: 1.0, 1.1, 1.2 or 1.3.
	// Default 1.2.
	//
	// +optional
	// +kubebuilder:validation:Enum="1.0";"1.1";"1.2";"1.3"
	MinVersion string `json:"minVersion,omitempty"`

	// CertExpiryWarning turns the CertificateValid condition False (reason
	// ExpiringSoon) when the served certificate chain expires sooner than
	// this; Ready is not affected. Default 336h (14 days); 0s turns the
	// warning off.
	//
	// +optional
	// +kubebuilder:default="336h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$`
	CertExpiryWarning *metav1.Duration `json:"certExpiryWarning,omitempty"`
}

// WebCheckerStatus is the observed outcome of the latest probes.
type WebCheckerStatus struct {
	// Conditions holds the Ready and the CertificateValid conditions, and
	// Reconciling while a result of the current generation is awaited.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation of the spec that the status
	// describes; 0 (the default the API server shows until the first
	// write) describes none.
	//
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// HTTPStatusCode is the final HTTP status code of the latest http or
	// https probe, or 0 when no response was received (and for the other
	// kinds).
	//
	// +optional
	HTTPStatusCode int32 `json:"httpStatusCode,omitempty"`

	// CertificateExpiry is the earliest expiry (notAfter) of the
	// certificate chain served by an https, tls or grpcs target in the
	// latest probe.
	//
	// +optional
	CertificateExpiry *metav1.Time `json:"certificateExpiry,omitempty"`

	// Shard is the identity of the operator replica that probes this
	// checker and writes its status (the owner, the first vantage point).
	//
	// +optional
	Shard string `json:"shard,omitempty"`

	// Quorum is, for a checker with spec.vantagePoints above 1, how many
	// of its vantage points succeed, of how many report: "2/3".
	//
	// +optional
	// +kubebuilder:validation:MaxLength=8
	Quorum string `json:"quorum,omitempty"`

	// VantagePoints holds, for a checker with spec.vantagePoints above 1,
	// the state of each replica that probes it. Each replica writes its
	// own entry only (server-side apply, field manager
	// webchecker-vantage-<shard>), when its state changes; the owner
	// removes the entries of replicas that no longer probe the checker.
	//
	// +optional
	// +listType=map
	// +listMapKey=shard
	// +kubebuilder:validation:MaxItems=16
	VantagePoints []VantagePointStatus `json:"vantagePoints,omitempty"`

	// Addresses holds, for a checker whose spec.addresses is Any, All or
	// Majority, the result of the latest probe of each address of its
	// host's name, written when one of them changes.
	//
	// +optional
	// +listType=map
	// +listMapKey=address
	// +kubebuilder:validation:MaxItems=16
	Addresses []AddressStatus `json:"addresses,omitempty"`
}

// AddressStatus is the result of the latest probe of one address of a
// checker's host name.
type AddressStatus struct {
	// Address is the IP address probed.
	//
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=45
	Address string `json:"address"`

	// Ready is True when the probe of this address succeeded, False when
	// it failed.
	//
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Ready metav1.ConditionStatus `json:"ready"`

	// Reason is ProbeSucceeded, or why the probe of this address failed
	// (the reasons of the Ready condition).
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason"`

	// Message says what the probe of this address saw, when it failed.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// VantagePointStatus is the state of one replica that probes a checker,
// after the checker's thresholds, as the Ready condition would be if that
// replica probed it alone.
type VantagePointStatus struct {
	// Shard is the replica's shard id.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Shard string `json:"shard"`

	// Zone is the replica's zone (its --zone), empty when unknown.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Zone string `json:"zone,omitempty"`

	// Ready is True while the replica's probes succeed, False while they
	// fail, Unknown when it cannot say.
	//
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Ready metav1.ConditionStatus `json:"ready"`

	// Reason is the Ready condition's reason as this replica sees it:
	// ProbeSucceeded, or why its probes fail.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`

	// Message says what this replica's latest probe saw.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// ObservedGeneration is the generation of the spec that this entry
	// describes; the owner counts only entries of the current one.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastTransitionTime is when Ready last changed at this replica.
	//
	// +required
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
}

// The resource has no categories: "all" is meant for a namespace's
// workloads, and `kubectl delete all --all` must not delete monitoring
// configuration (see the README's "kubectl and RBAC").

// WebChecker probes a server outside the cluster (HTTP, TCP, TLS, gRPC
// or DNS) and reports whether it is up in its Ready condition.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wc
// +kubebuilder:validation:XValidation:rule="!has(self.spec.dependsOn) || !(self.metadata.name in self.spec.dependsOn)",message="spec.dependsOn: a checker cannot depend on itself"
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.host`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.path`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`,priority=1
// +kubebuilder:printcolumn:name="Code",type=integer,JSONPath=`.status.httpStatusCode`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Maintenance",type=string,JSONPath=`.status.conditions[?(@.type=="Maintenance")].status`,priority=1
// +kubebuilder:printcolumn:name="Interval",type=string,JSONPath=`.spec.interval`,priority=1
// +kubebuilder:printcolumn:name="Shard",type=string,JSONPath=`.status.shard`,priority=1
// +kubebuilder:printcolumn:name="Quorum",type=string,JSONPath=`.status.quorum`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Cert-Expiry",type=string,JSONPath=`.status.certificateExpiry`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebChecker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WebCheckerSpec `json:"spec"`
	// Status is the observed outcome of the latest probes. Until the
	// checker's owner first writes it, it reads {observedGeneration: 0}:
	// generation 1 not observed yet, which kstatus (Flux, kpt) reads as
	// in progress, and a status that health expressions can refer to.
	//
	// +optional
	// +kubebuilder:default={}
	Status WebCheckerStatus `json:"status,omitempty"`
}

// WebCheckerList is a list of WebCheckers.
//
// +kubebuilder:object:root=true
type WebCheckerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebChecker `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WebChecker{}, &WebCheckerList{})
}
