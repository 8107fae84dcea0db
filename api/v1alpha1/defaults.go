package v1alpha1

import "time"

// Defaults of WebCheckerSpec. The API server applies them (the
// +kubebuilder:default markers on the fields carry the same values, and a
// test holds the two together); code that reads a spec stored before a
// default existed resolves a missing field to these, and to nothing else.
const (
	// DefaultPath is spec.path's default.
	DefaultPath = "/"
	// DefaultMethod is spec.method's default.
	DefaultMethod = "GET"
	// DefaultInterval is spec.interval's default.
	DefaultInterval = 10 * time.Second
	// DefaultTimeout is spec.timeout's default.
	DefaultTimeout = time.Second
	// DefaultFollowRedirects is spec.followRedirects' default.
	DefaultFollowRedirects = true
	// DefaultIPFamily is spec.ipFamily's default.
	DefaultIPFamily = IPFamilyAny
	// DefaultAddresses is spec.addresses' default: as a client connects.
	DefaultAddresses = AddressesFirst
	// DefaultMaxBodyBytes is spec.bodyMatch.maxBodyBytes' default (64 KiB).
	DefaultMaxBodyBytes int64 = 64 << 10
	// DefaultCertExpiryWarning is spec.tls.certExpiryWarning's default
	// (14 days).
	DefaultCertExpiryWarning = 14 * 24 * time.Hour
	// DefaultSuspend is spec.suspend's default: probed.
	DefaultSuspend = false
	// DefaultFailureThreshold is spec.failureThreshold's default.
	DefaultFailureThreshold int32 = 1
	// DefaultSuccessThreshold is spec.successThreshold's default.
	DefaultSuccessThreshold int32 = 1
	// DefaultVantagePoints is spec.vantagePoints' default: the owner
	// alone probes the checker.
	DefaultVantagePoints int32 = 1
)

// Limits of WebCheckerSpec that code checks as well as the API server (the
// validation markers on the fields carry the same values).
const (
	// MaxTimeout is the largest spec.timeout: a probe that takes longer
	// says more about the prober than about the server, and would hold a
	// probe worker for that long.
	MaxTimeout = 60 * time.Second
	// MaxThreshold is the largest spec.failureThreshold and
	// spec.successThreshold; the smallest is 1.
	MaxThreshold int32 = 20
	// MaxWindowProbes is the largest spec.failureWindow.probes (and so
	// failures); the smallest is 1.
	MaxWindowProbes int32 = 64
	// MaxVantagePoints is the largest spec.vantagePoints.
	MaxVantagePoints int32 = 5
)

// Defaults of the probe kinds' options.
const (
	// DefaultMaxReplyBytes is spec.tcp.maxReplyBytes' default (64 KiB).
	DefaultMaxReplyBytes int64 = 64 << 10
	// DefaultDNSType is spec.dns.type's default.
	DefaultDNSType = "A"
	// DefaultDNSTransport is spec.dns.transport's default.
	DefaultDNSTransport = "udp"
	// DefaultDNSRecursionDesired is spec.dns.recursionDesired's default.
	DefaultDNSRecursionDesired = true
)

// Limits of spec.conditions (the CRD's markers carry the same values;
// the conditions package enforces its own, equal ones).
const (
	// MaxConditions is the most conditions a checker has.
	MaxConditions = 16
	// MaxConditionExpressionBytes bounds one condition's expression.
	MaxConditionExpressionBytes = 1024
	// MaxConditionMessageBytes bounds one condition's message.
	MaxConditionMessageBytes = 256
)
