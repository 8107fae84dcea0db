package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of a WebChecker. Failure reasons are the
// failure classes of the probing package (DNSFailed, ConnectionFailed,
// Timeout, TLSError, UnexpectedStatus, TooManyRedirects, InvalidTarget).
const (
	// ConditionReady is True while the server answers with an accepted
	// status code, False while it does not, Unknown before the first result.
	ConditionReady = "Ready"
	// ReasonPending is the Ready reason before the first probe result.
	ReasonPending = "Pending"
)

// WebCheckerSpec describes the server to probe and how.
//
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !has(self.interval) || !self.timeout.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || !self.interval.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self.timeout) < duration(self.interval)",message="timeout must be less than interval"
type WebCheckerSpec struct {
	// Host is the server to probe: http://host[:port], https://host[:port],
	// or a bare host[:port] meaning http. It carries no path, query or
	// fragment; use path for those.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('://') || self.startsWith('http://') || self.startsWith('https://')",message="host must use the http or https scheme (or no scheme, meaning http)"
	// +kubebuilder:validation:XValidation:rule="!self.contains('?') && !self.contains('#')",message="host must not contain a query or fragment; put them in path"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="host must not contain credentials"
	// +kubebuilder:validation:XValidation:rule="isURL(self.contains('://') ? self : 'http://' + self) && url(self.contains('://') ? self : 'http://' + self).getHostname() != ''",message="host must be a valid URL such as https://example.com:8443 or example.com"
	// +kubebuilder:validation:XValidation:rule="!isURL(self.contains('://') ? self : 'http://' + self) || url(self.contains('://') ? self : 'http://' + self).getEscapedPath() in ['', '/']",message="host must not contain a path; use path"
	Host string `json:"host"`

	// Path is the request path, with an optional query. It must start with
	// a single /.
	//
	// +optional
	// +kubebuilder:default="/"
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
	// must be positive and less than interval.
	//
	// +optional
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="timeout must be positive"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Method is the HTTP method, GET or HEAD.
	//
	// +optional
	// +kubebuilder:default=GET
	// +kubebuilder:validation:Enum=GET;HEAD
	Method string `json:"method,omitempty"`

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
	// itself.
	//
	// +optional
	// +kubebuilder:default=true
	FollowRedirects *bool `json:"followRedirects,omitempty"`
}

// WebCheckerStatus is the observed outcome of the latest probes.
type WebCheckerStatus struct {
	// Conditions holds the Ready condition.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation of the spec that the status
	// describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// HTTPStatusCode is the final HTTP status code of the latest probe, or 0
	// when no response was received.
	//
	// +optional
	HTTPStatusCode int32 `json:"httpStatusCode,omitempty"`

	// Shard is the identity of the operator replica that probes this
	// checker and writes its status.
	//
	// +optional
	Shard string `json:"shard,omitempty"`
}

// WebChecker probes an HTTP(S) server outside the cluster and reports
// whether it is up in its Ready condition.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wc,categories=all
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.host`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.path`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Code",type=integer,JSONPath=`.status.httpStatusCode`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Interval",type=string,JSONPath=`.spec.interval`,priority=1
// +kubebuilder:printcolumn:name="Shard",type=string,JSONPath=`.status.shard`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebChecker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WebCheckerSpec `json:"spec"`
	// +optional
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
