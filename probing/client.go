package probing

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
)

// probeContext is what a probe's request carries in its context for the
// parts of the client that every probe shares: its redirect policy and
// the names of its headers that came from Secrets, which checkRedirect
// drops on a redirect to another host (as net/http does with
// Authorization), and the tracer of its phases, which http1Transport
// calls and tracedTransport hands to net/http as httptrace hooks.
type probeContext struct {
	followRedirects  bool
	sensitiveHeaders []string
	tracer           phaseTracer
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
// and drops the headers from Secrets on the way to another host.
func checkRedirect(req *http.Request, via []*http.Request) error {
	pc := probeContextOf(req.Context())
	if pc == nil || !pc.followRedirects {
		return http.ErrUseLastResponse
	}
	if len(via) >= MaxRedirects {
		return &tooManyRedirectsError{url: req.URL}
	}
	if req.URL.Host != via[0].URL.Host {
		for _, name := range pc.sensitiveHeaders {
			req.Header.Del(name)
		}
	}
	return nil
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
