package probing

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// probeContext is what a probe's request carries in its context for the
// parts of the client that every probe shares: its redirect policy and
// the names of its headers that came from Secrets, which checkRedirect
// drops (with credentialHeaders, where basic auth and bearer tokens go)
// once a redirect leaves the first request's origin, and the tracer of its
// phases, which http1Transport calls and tracedTransport hands to
// net/http as httptrace hooks.
type probeContext struct {
	followRedirects  bool
	sensitiveHeaders []string
	tracer           phaseTracer
	// token is the OAuth2 access token of the probe's requests, if any.
	token Secret
}

// probeContextKey is the context key of a request's *probeContext.
type probeContextKey struct{}

// probeContextOf returns the probeContext of a probe's request context, or
// nil for a request that no probe made.
func probeContextOf(ctx context.Context) *probeContext {
	pc, _ := ctx.Value(probeContextKey{}).(*probeContext)
	return pc
}

// tooManyRedirectsError is returned by checkRedirect when MaxRedirects is
// reached. It keeps the absolute URL of the redirect not followed (the
// client's *url.Error only has the raw Location header).
type tooManyRedirectsError struct{ url *url.URL }

func (e *tooManyRedirectsError) Error() string {
	return fmt.Sprintf("stopped after %d redirects", MaxRedirects)
}

// checkRedirect is the redirect policy of every client: it follows
// redirects only when the probe asks for it, at most MaxRedirects of them,
// and sends credentials only to the origin they were given for (see
// leftOrigin).
func checkRedirect(req *http.Request, via []*http.Request) error {
	pc := probeContextOf(req.Context())
	if pc == nil || !pc.followRedirects {
		return http.ErrUseLastResponse
	}
	if len(via) >= MaxRedirects {
		return &tooManyRedirectsError{url: req.URL}
	}
	if leftOrigin(req, via) {
		for _, name := range pc.sensitiveHeaders {
			req.Header.Del(name)
		}
		for _, name := range credentialHeaders {
			req.Header.Del(name)
		}
	}
	return nil
}

// credentialHeaders are the header fields that carry credentials by their
// name, whatever their value's source: checkRedirect drops them as it
// drops the headers from Secrets, spec.headers' literal values included.
// net/http's client drops the same ones on a redirect to a host that is
// neither the first one nor a subdomain of it, but keeps them on a change
// of scheme or port.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2"}

// leftOrigin tells whether req, the next request of a redirect chain, or
// one of the requests via since the first went to another origin than the
// first: another scheme (http to https as well as https to http), host or
// port. A chain that went elsewhere and came back has left, as net/http
// decides: http.Client copies the first request's headers onto every hop,
// and a hop chosen by another server must not get them back.
func leftOrigin(req *http.Request, via []*http.Request) bool {
	first := originOf(via[0].URL)
	for _, hop := range via[1:] {
		if originOf(hop.URL) != first {
			return true
		}
	}
	return originOf(req.URL) != first
}

// origin is the scheme, host and port of a URL, as the web compares them
// (RFC 6454): the scheme and host in lower case, the port explicit.
type origin struct{ scheme, hostPort string }

func originOf(u *url.URL) origin {
	lower := *u
	lower.Scheme, lower.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return origin{scheme: lower.Scheme, hostPort: webHostPort(&lower)}
}

// send sends req with client and returns the response, as client.Do
// does, but asks the client only for what needs one. A request that the
// client's http1Transport sends itself (plain HTTP, see handles) goes
// straight to it, and a response that is a redirect to follow (the
// probe's policy, as checkRedirect reads it, and a status http.Client
// follows) goes to the client with the request, to follow the chain from
// there as it would have from the start (see answeredTransport); errors
// are *url.Error, as the client's are. Other requests go through
// client.Do, which also translates some errors of http.Transport.
func send(client *http.Client, req *http.Request) (*http.Response, error) {
	h1, ok := client.Transport.(*http1Transport)
	if !ok || !h1.handles(req) || req.URL.User != nil { // net/http turns URL credentials into a header
		return client.Do(req)
	}
	resp, err := h1.roundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: redactURL(req.URL), Err: err}
	}
	if pc := probeContextOf(req.Context()); pc == nil || !pc.followRedirects || !followedStatus(resp.StatusCode) {
		return resp, nil
	}
	follower := *client
	follower.Transport = &answeredTransport{resp: resp, next: client.Transport}
	return follower.Do(req)
}

// followedStatus tells whether http.Client may follow a response with
// status code: one of the redirects it knows (it decides the rest, from
// the Location header and the request's body).
func followedStatus(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// answeredTransport answers the first request it gets with resp, already
// received, and sends the others with next: it lets http.Client follow a
// redirect chain whose first response came without it.
type answeredTransport struct {
	resp  *http.Response
	taken atomic.Bool
	next  http.RoundTripper
}

func (t *answeredTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.taken.CompareAndSwap(false, true) {
		return t.resp, nil
	}
	return t.next.RoundTrip(req)
}
