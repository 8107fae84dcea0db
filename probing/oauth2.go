package probing

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// OAuth2 is the OAuth 2.0 client credentials grant (RFC 6749, section
// 4.4) of an http or https target: its probes send the access token the
// token endpoint issues as "Authorization: Bearer ...".
type OAuth2 struct {
	// TokenURL is the token endpoint: an absolute http or https URL.
	TokenURL string
	// ClientID and ClientSecret authenticate the client (HTTP basic
	// authentication, as RFC 6749 section 2.3.1 asks).
	ClientID     Secret
	ClientSecret Secret
	// Scopes are requested, space-separated; none sends no scope.
	Scopes []string
}

// check reports why o cannot be used.
func (o *OAuth2) check() error {
	u, err := url.Parse(o.TokenURL)
	switch {
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil:
		return errors.New("oauth2: the token URL is not an http or https URL without credentials")
	case o.ClientID == "":
		return errors.New("oauth2: empty client id")
	}
	return nil
}

func (o *OAuth2) equal(p *OAuth2) bool {
	if o == nil || p == nil {
		return o == p
	}
	return o.TokenURL == p.TokenURL && o.ClientID == p.ClientID && o.ClientSecret == p.ClientSecret &&
		strings.Join(o.Scopes, " ") == strings.Join(p.Scopes, " ")
}

// Bounds of a token exchange: the answer read at most, the lifetime of a
// token whose answer gives none, and the least time before its expiry at
// which a token is fetched anew.
const (
	maxTokenResponseBytes = 64 << 10
	defaultTokenLifetime  = time.Minute
	maxTokenEarlyRefresh  = 30 * time.Second
)

// ReasonTokenFailed means the OAuth2 token endpoint did not issue a
// token (see TargetSpec.OAuth2), so the target was not asked.
const ReasonTokenFailed Reason = "TokenFailed"

// tokenKey identifies a grant: a token fetched for one is used for
// another only if everything that asks for it is the same.
type tokenKey struct {
	tokenURL    string
	credentials [sha256.Size]byte
	scopes      string
	transport   transportKey
}

// cachedToken is a token and when it stops being used.
type cachedToken struct {
	token     Secret
	refreshAt time.Time
}

// tokens fetches and caches the access tokens of OAuth2 targets: a token
// is fetched once for every probe of every target with the same grant,
// and again shortly before it expires (or when a target refuses it with
// 401). Concurrent probes wait for one fetch.
type tokens struct {
	transports *transports
	// dnsServerOf names the DNS server of a target's lookups (see
	// ProberOptions.dnsServerOf), for failure texts.
	dnsServerOf func(*builtTarget) string
	fetches     singleflight.Group

	mu     sync.Mutex
	cached map[tokenKey]cachedToken
}

func newTokens(ts *transports, dnsServerOf func(*builtTarget) string) *tokens {
	return &tokens{transports: ts, dnsServerOf: dnsServerOf, cached: map[tokenKey]cachedToken{}}
}

// keyOf is the grant of t, whose token requests go through the transport
// of t's connections (egress allowance, IP family, proxy, DNS server)
// verifying the endpoint with t's CA bundle, never with
// InsecureSkipVerify: the request carries the client's secret.
func (ts *tokens) keyOf(t *builtTarget) tokenKey {
	o := t.OAuth2
	// The target's transport but for what concerns its own server: the
	// token request verifies the endpoint with the CA bundle alone (never
	// skipped), presents no client certificate and keeps no connection.
	transport := t.transport
	transport.insecureSkipVerify, transport.serverName, transport.minVersion = false, "", 0
	transport.clientCertificate, transport.clientKey, transport.reuseConnections = "", "", false
	id, secret := o.ClientID.Reveal(), o.ClientSecret.Reveal()
	return tokenKey{
		tokenURL:    o.TokenURL,
		credentials: sha256.Sum256([]byte(strconv.Itoa(len(id)) + ":" + id + secret)),
		scopes:      strings.Join(o.Scopes, " "),
		transport:   transport,
	}
}

// token returns the access token of t's grant, fetched with ctx (the
// probe's, which carries its egress allowance) when none is cached, or
// the Result of a failed fetch.
func (ts *tokens) token(ctx context.Context, t *builtTarget) (Secret, *Result) {
	key := ts.keyOf(t)
	now := time.Now()
	ts.mu.Lock()
	cached, ok := ts.cached[key]
	ts.mu.Unlock()
	if ok && now.Before(cached.refreshAt) {
		return cached.token, nil
	}
	v, err, _ := ts.fetches.Do(string(key.credentials[:])+key.tokenURL+"\x00"+key.scopes, func() (any, error) {
		return ts.fetch(ctx, t, key)
	})
	if err != nil {
		res := tokenFailure(ctx, t, ts.dnsServerOf(t), err)
		return "", &res
	}
	return v.(Secret), nil
}

// forget drops the cached token of t's grant, which the target refused:
// the next probe fetches another.
func (ts *tokens) forget(t *builtTarget) {
	key := ts.keyOf(t)
	ts.mu.Lock()
	delete(ts.cached, key)
	ts.mu.Unlock()
}

// fetch asks the token endpoint for a token and caches it until shortly
// before it expires; expired tokens of other grants are dropped.
func (ts *tokens) fetch(ctx context.Context, t *builtTarget, key tokenKey) (Secret, error) {
	client, err := ts.transports.client(key.transport, t.Proxy)
	if err != nil {
		return "", err
	}
	token, lifetime, err := requestToken(ctx, client, t.OAuth2)
	if err != nil {
		return "", err
	}
	now := time.Now()
	early := min(maxTokenEarlyRefresh, lifetime/10)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for k, c := range ts.cached {
		if !now.Before(c.refreshAt) {
			delete(ts.cached, k)
		}
	}
	ts.cached[key] = cachedToken{token: token, refreshAt: now.Add(lifetime - early)}
	return token, nil
}

// tokenError is a failed token exchange, in fixed words: the endpoint's
// answer is never quoted.
type tokenError struct{ text string }

func (e *tokenError) Error() string { return e.text }

// requestToken makes the client credentials request of o with client
// and returns the token and its lifetime.
func requestToken(ctx context.Context, client *http.Client, o *OAuth2) (Secret, time.Duration, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(o.Scopes) > 0 {
		form.Set("scope", strings.Join(o.Scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(o.ClientID.Reveal()), url.QueryEscape(o.ClientSecret.Reveal()))
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", 0, &tokenError{fmt.Sprintf("the token endpoint answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponseBytes+1))
	if err != nil {
		return "", 0, fmt.Errorf("read token response: %w", err)
	}
	if len(body) > maxTokenResponseBytes {
		return "", 0, &tokenError{fmt.Sprintf("the token endpoint's answer is larger than %d bytes", maxTokenResponseBytes)}
	}
	var answer struct {
		AccessToken string          `json:"access_token"`
		TokenType   string          `json:"token_type"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	if json.Unmarshal(body, &answer) != nil {
		return "", 0, &tokenError{"the token endpoint's answer is not a JSON token response"}
	}
	switch {
	case answer.AccessToken == "":
		return "", 0, &tokenError{"the token endpoint's answer has no access_token"}
	case answer.TokenType != "" && !strings.EqualFold(answer.TokenType, "bearer"):
		return "", 0, &tokenError{"the token endpoint issued a token that is not a bearer token"}
	case strings.ContainsAny(answer.AccessToken, "\r\n"):
		return "", 0, &tokenError{"the token endpoint issued a token with a line break"}
	}
	lifetime := defaultTokenLifetime
	if seconds, err := strconv.ParseFloat(strings.Trim(string(answer.ExpiresIn), `"`), 64); err == nil && seconds > 0 {
		lifetime = time.Duration(min(seconds, 366*24*3600) * float64(time.Second))
	}
	return Secret(answer.AccessToken), lifetime, nil
}

// tokenFailure is the Result of a failed token exchange of t: an egress
// denial is ReasonEgressDenied, a timeout ReasonTimeout, anything else
// ReasonTokenFailed; the text names the token URL and never quotes what
// the endpoint sent.
func tokenFailure(ctx context.Context, t *builtTarget, dnsServer string, err error) Result {
	prefix := "OAuth2 token request to " + strconv.Quote(t.OAuth2.TokenURL) + ": "
	if ctx.Err() != nil {
		return Result{Reason: ReasonTimeout, Message: prefix + "timeout after " + t.Timeout.String()}
	}
	var te *tokenError
	if errors.As(err, &te) {
		return Result{Reason: ReasonTokenFailed, Message: prefix + te.text}
	}
	reason := classify(err)
	if reason != ReasonEgressDenied {
		reason = ReasonTokenFailed
	}
	u, _ := url.Parse(t.OAuth2.TokenURL)
	scope := textScope{dnsServer: dnsServer, addr: webHostPort(u), names: []string{u.Hostname()}}
	return Result{Reason: reason, Message: prefix + errorText(err, scope)}
}
