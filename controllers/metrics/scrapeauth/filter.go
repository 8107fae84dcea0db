package scrapeauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long decisions are cached, as controller-runtime's filter does: an
// accepted token for a minute, a rejected one for ten seconds, an allowed
// request for five minutes, a denied one for thirty seconds.
const (
	tokenAcceptedTTL = time.Minute
	tokenRejectedTTL = 10 * time.Second
	allowedTTL       = 5 * time.Minute
	deniedTTL        = 30 * time.Second
	// cacheSize bounds each cache (least recently used entries go first).
	cacheSize = 1024
	// reviewTimeout bounds one review request.
	reviewTimeout = 10 * time.Second
)

// reviewBackoff retries a review that failed for a reason other than the
// API server's answer (it is down, overloaded, or timed out).
var reviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// FilterProvider is a metricsserver.Options FilterProvider: the filter it
// returns serves a request only for a client authenticated and authorized
// by the API server that config reaches. It answers 401 without a bearer
// token or with one the API server rejects, 403 to a user not allowed to
// get the path, and 500 when the API server could not tell.
func FilterProvider(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the TokenReview client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the SubjectAccessReview client: %w", err)
	}
	g := newGuard(authn.TokenReviews(), authz.SubjectAccessReviews())
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return g.handler(log, next), nil
	}, nil
}

// guard holds the review clients and the cached decisions.
type guard struct {
	tokens interface {
		Create(context.Context, *authenticationv1.TokenReview, metav1.CreateOptions) (*authenticationv1.TokenReview, error)
	}
	access interface {
		Create(context.Context, *authorizationv1.SubjectAccessReview, metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
	}
	// users maps the SHA-256 of a token (never the token itself) to a
	// *authenticationv1.UserInfo, or nil for a rejected token.
	users *cache.LRUExpireCache
	// decisions maps an accessKey to a bool: allowed.
	decisions *cache.LRUExpireCache
}

func newGuard(tokens authenticationclient.TokenReviewInterface, access authorizationclient.SubjectAccessReviewInterface) *guard {
	return &guard{tokens: tokens, access: access, users: cache.NewLRUExpireCache(cacheSize), decisions: cache.NewLRUExpireCache(cacheSize)}
}

func (g *guard) handler(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		user, err := g.authenticate(req.Context(), token)
		if err != nil {
			log.Error(err, "Authenticating a metrics client failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if user == nil {
			log.V(1).Info("Metrics client's token rejected", "remote", req.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics", error="invalid_token"`)
			http.Error(w, "Unauthorized: the token was rejected", http.StatusUnauthorized)
			return
		}
		verb, path := strings.ToLower(req.Method), req.URL.Path
		allowed, err := g.authorize(req.Context(), user, verb, path)
		if err != nil {
			log.Error(err, "Authorizing a metrics client failed", "user", user.Username)
			http.Error(w, "Authorization failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			log.V(1).Info("Metrics client not allowed", "user", user.Username, "verb", verb, "path", path)
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s", user.Username, verb, path), http.StatusForbidden)
			return
		}
		req.Header.Del("Authorization") // the metrics handler has no use for it
		next.ServeHTTP(w, req)
	})
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header value.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// authenticate returns who token belongs to, or nil if the API server
// rejects it.
func (g *guard) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := g.users.Get(key); ok {
		return v.(*authenticationv1.UserInfo), nil
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	var result *authenticationv1.TokenReview
	err := withRetry(ctx, func(ctx context.Context) (err error) {
		result, err = g.tokens.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("creating a TokenReview: %w", err)
	}
	if !result.Status.Authenticated {
		// Rejected, or no authenticator could vouch for it (then
		// status.error says why): a client without a valid token either way.
		g.users.Add(key, (*authenticationv1.UserInfo)(nil), tokenRejectedTTL)
		return nil, nil
	}
	user := result.Status.User
	g.users.Add(key, &user, tokenAcceptedTTL)
	return &user, nil
}

// authorize tells whether user may verb path.
func (g *guard) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := accessKeyOf(user, verb, path)
	if v, ok := g.decisions.Get(key); ok {
		return v.(bool), nil
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                user.Groups,
		Extra:                 extraOf(user.Extra),
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	var result *authorizationv1.SubjectAccessReview
	err := withRetry(ctx, func(ctx context.Context) (err error) {
		result, err = g.access.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	// Not allowed also when no authorizer had an opinion, or one failed
	// (status.evaluationError): only an explicit allow serves metrics.
	allowed := result.Status.Allowed && !result.Status.Denied
	ttl := deniedTTL
	if allowed {
		ttl = allowedTTL
	}
	g.decisions.Add(key, allowed, ttl)
	return allowed, nil
}

// accessKey identifies a user and request in the decisions cache.
type accessKey struct{ user, uid, groups, extra, verb, path string }

func accessKeyOf(user *authenticationv1.UserInfo, verb, path string) accessKey {
	groups := slices.Clone(user.Groups)
	slices.Sort(groups)
	names := make([]string, 0, len(user.Extra))
	for name := range user.Extra {
		names = append(names, name)
	}
	slices.Sort(names)
	var extra strings.Builder
	for _, name := range names {
		fmt.Fprintf(&extra, "%q=%q;", name, []string(user.Extra[name]))
	}
	return accessKey{user: user.Username, uid: user.UID, groups: fmt.Sprintf("%q", groups), extra: extra.String(), verb: verb, path: path}
}

func extraOf(in map[string]authenticationv1.ExtraValue) map[string]authorizationv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authorizationv1.ExtraValue(v)
	}
	return out
}

// withRetry runs review with a timeout per attempt, again with backoff
// while it fails for a reason other than the API server's answer to it.
func withRetry(ctx context.Context, review func(context.Context) error) error {
	return retry.OnError(reviewBackoff, func(err error) bool {
		if ctx.Err() != nil {
			return false
		}
		return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
			apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) ||
			!isStatusError(err)
	}, func() error {
		ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
		defer cancel()
		return review(ctx)
	})
}

// isStatusError tells whether err is the API server's answer (not a
// failure to reach it).
func isStatusError(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}
