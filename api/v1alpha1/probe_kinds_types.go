package v1alpha1

// TCPProbe is what a tcp or tls probe sends once connected (after the
// handshake for tls) and the reply it expects, like the blackbox
// exporter's query_response: a banner to wait for (SMTP, SSH, ...) or a
// request and its answer (Redis PING, ...).
type TCPProbe struct {
	// Send is written to the connection as is, once it is up. Escapes are
	// not interpreted: write a line break as a YAML "\r\n".
	//
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Send string `json:"send,omitempty"`

	// Expect is an RE2 regular expression (Go syntax) that what the server
	// sends must match: the probe reads until it matches, the server
	// closes the connection or maxReplyBytes were read (reason
	// UnexpectedReply), or the timeout expires. Its compiled program may
	// have at most 2000 instructions, and its size times maxReplyBytes at
	// most 2^25 (33,554,432); otherwise Ready is False with reason
	// RegexTooComplex. The API server refuses a repeat count over 99,
	// counts over 1000 in all, a count over 9 for a group ((...){10}), and,
	// in a pattern over 32 bytes, a group's count with other counts or over
	// 256 bytes, before its own check of the expression compiles it (write a literal
	// { as [{]): a 1 KiB expression of copies of .{1000} took it 38 MB and
	// 74 ms per create.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.matches('[{]([0-9]*,)?[0-9]{3,}') && !self.matches('[)][{]([0-9]*,)?[0-9]{2,}') && self.findAll('[{,][0-9]{1,2}').map(m, int(m.substring(1))).sum() <= 1000 && (!self.matches('[)][{]') || size(self) <= 32 || (size(self) <= 256 && self.findAll('[{][0-9]').size() == self.findAll('[)][{][0-9]').size()))",message="expect's repeat counts must be at most 99 and 1000 in all, and a group's at most 9 (over 32 bytes, a pattern with a group's count has no other, and at most 256 bytes), so that the API server's own check compiles a small program (write a literal { as [{])"
	// +kubebuilder:validation:XValidation:rule="self.matches('[{]([0-9]*,)?[0-9]{3,}') || self.matches('[)][{]([0-9]*,)?[0-9]{2,}') || self.findAll('[{,][0-9]{1,2}').map(m, int(m.substring(1))).sum() > 1000 || !(!self.matches('[)][{]') || size(self) <= 32 || (size(self) <= 256 && self.findAll('[{][0-9]').size() == self.findAll('[)][{][0-9]').size())) || type(''.matches(self)) == bool",message="expect must be a valid RE2 regular expression"
	Expect string `json:"expect,omitempty"`

	// MaxReplyBytes is how much of the reply is read at most, at most
	// 1 MiB.
	//
	// +optional
	// +kubebuilder:default=65536
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxReplyBytes *int64 `json:"maxReplyBytes,omitempty"`
}

// GRPCProbe is the standard gRPC health check (grpc.health.v1.Health/Check)
// of a grpc or grpcs probe: SERVING is success, NOT_SERVING (reason
// NotServing), SERVICE_UNKNOWN (ServiceUnknown) and UNKNOWN
// (ServingStatusUnknown) are failures, and so is a call that fails
// (GRPCError, with the gRPC code: Unimplemented when the server has no
// health service).
type GRPCProbe struct {
	// Service is the service asked about; empty asks about the server as a
	// whole.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Service string `json:"service,omitempty"`
}

// DNSProbe is the query a dns probe sends to the server of spec.host and
// how its response is judged.
type DNSProbe struct {
	// Name is the name queried.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9_*]([-A-Za-z0-9_]*[A-Za-z0-9_])?\.)*[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\.?$|^\.$`
	Name string `json:"name"`

	// Type is the record type queried.
	//
	// +optional
	// +kubebuilder:default=A
	// +kubebuilder:validation:Enum=A;AAAA;CNAME;MX;NS;PTR;SOA;SRV;TXT;CAA
	Type string `json:"type,omitempty"`

	// Transport is udp or tcp. A truncated UDP response is judged as it is.
	//
	// +optional
	// +kubebuilder:default=udp
	// +kubebuilder:validation:Enum=udp;tcp
	Transport string `json:"transport,omitempty"`

	// RecursionDesired sets the RD bit: false asks an authoritative server
	// about its own zones only.
	//
	// +optional
	// +kubebuilder:default=true
	RecursionDesired *bool `json:"recursionDesired,omitempty"`

	// ValidRcodes lists the accepted response codes; empty accepts only
	// NOERROR. Any other is a failure (reason UnexpectedRcode).
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=6
	// +kubebuilder:validation:items:Enum=NOERROR;FORMERR;SERVFAIL;NXDOMAIN;NOTIMP;REFUSED
	ValidRcodes []string `json:"validRcodes,omitempty"`

	// AnswerMatch are RE2 regular expressions (Go syntax) that must each
	// match at least one record of the answer section, written as in a
	// zone file ("example.com. 300 IN A 192.0.2.1"); otherwise reason
	// AnswerMismatch. Each compiles to a program of at most 2000
	// instructions (otherwise Ready is False with reason
	// RegexTooComplex), and matching the answer section may take at most
	// 2^25 steps per probe (program size times record length, summed).
	// The API server refuses repeat counts as for tcp.expect.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(r, !r.matches('[{]([0-9]*,)?[0-9]{3,}') && !r.matches('[)][{]([0-9]*,)?[0-9]{2,}') && r.findAll('[{,][0-9]{1,2}').map(m, int(m.substring(1))).sum() <= 1000 && (!r.matches('[)][{]') || size(r) <= 32 || (size(r) <= 256 && r.findAll('[{][0-9]').size() == r.findAll('[)][{][0-9]').size())))",message="answerMatch entries' repeat counts must be at most 99 and 1000 in all, and a group's at most 9 (over 32 bytes, a pattern with a group's count has no other, and at most 256 bytes), so that the API server's own check compiles a small program (write a literal { as [{])"
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.matches('[{]([0-9]*,)?[0-9]{3,}') || r.matches('[)][{]([0-9]*,)?[0-9]{2,}') || r.findAll('[{,][0-9]{1,2}').map(m, int(m.substring(1))).sum() > 1000 || !(!r.matches('[)][{]') || size(r) <= 32 || (size(r) <= 256 && r.findAll('[{][0-9]').size() == r.findAll('[)][{][0-9]').size())) || type(''.matches(r)) == bool)",message="answerMatch entries must be valid RE2 regular expressions"
	AnswerMatch []string `json:"answerMatch,omitempty"`
}

// ResponseCondition is one CEL expression a probe's answer must satisfy.
type ResponseCondition struct {
	// Expression is a CEL expression of type bool over the variables of
	// the probe's kind (see the README's "Conditions").
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Expression string `json:"expression"`

	// Message is the Ready message when the expression is false; empty
	// names the condition and its expression.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message,omitempty"`
}

// ProxySpec is an HTTP proxy that a probe goes through.
type ProxySpec struct {
	// URL is the proxy: http://host:port, or https://host:port for a proxy
	// reached over TLS. Credentials go in credentialsSecretRef, never in
	// the URL.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="proxy url must be http://host:port or https://host:port"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="proxy url must not contain credentials; use credentialsSecretRef"
	// +kubebuilder:validation:XValidation:rule="!isURL(self) || (url(self).getHostname() != '' && url(self).getEscapedPath() in ['', '/'] && url(self).getQuery().size() == 0)",message="proxy url must be http://host:port or https://host:port, without a path or query"
	URL string `json:"url"`

	// CredentialsSecretRef names a Secret in the checker's namespace whose
	// "username" and "password" keys (as in a kubernetes.io/basic-auth
	// Secret) are sent to the proxy as Proxy-Authorization.
	//
	// +optional
	CredentialsSecretRef *SecretReference `json:"credentialsSecretRef,omitempty"`
}
