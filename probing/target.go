package probing

import (
	"slices"
	"time"
)

// Target describes what to probe and how to judge the answer.
type Target struct {
	// URL is the absolute http or https URL to request (see BuildURL).
	URL string
	// Method is the HTTP method, GET or HEAD.
	Method string
	// Timeout bounds the whole probe: resolution, connection, TLS, request,
	// and reading the (size-limited) response body.
	Timeout time.Duration
	// ExpectedStatusCodes lists the accepted final status codes. When empty,
	// any 2xx or 3xx code is accepted.
	ExpectedStatusCodes []int
	// FollowRedirects makes the prober follow up to MaxRedirects redirects.
	// When false the first response, redirect or not, is judged.
	FollowRedirects bool
}

// MaxRedirects is the number of redirects a probe follows at most.
const MaxRedirects = 10

// Equal reports whether t and o describe the same probe.
func (t Target) Equal(o Target) bool {
	return t.URL == o.URL && t.Method == o.Method && t.Timeout == o.Timeout &&
		t.FollowRedirects == o.FollowRedirects && slices.Equal(t.ExpectedStatusCodes, o.ExpectedStatusCodes)
}

// Accepts reports whether code is an accepted final status code.
func (t Target) Accepts(code int) bool {
	if len(t.ExpectedStatusCodes) == 0 {
		return code >= 200 && code < 400
	}
	return slices.Contains(t.ExpectedStatusCodes, code)
}
