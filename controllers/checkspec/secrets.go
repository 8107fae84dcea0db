package checkspec

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
)

// SecretValues returns the value of key in the Secret called name in the
// checker's namespace. A missing Secret is an error for which
// apierrors.IsNotFound is true; a missing key is ErrMissingKey.
type SecretValues func(name, key string) ([]byte, error)

// ErrMissingKey is the error of SecretValues for a key the Secret lacks.
var ErrMissingKey = errors.New("missing key")

// SecretReader returns the SecretValues of namespace, read through reader
// (the manager's cache, which watches Secrets). selector is the label
// selector the cache restricts Secrets to (nil: none), which a missing
// Secret's error names.
func SecretReader(ctx context.Context, reader client.Reader, namespace string, selector labels.Selector) SecretValues {
	return func(name, key string) ([]byte, error) {
		var secret corev1.Secret
		if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &secret); err != nil {
			if selector != nil && apierrors.IsNotFound(err) {
				return nil, &unselectedSecretError{err: err, selector: selector}
			}
			return nil, err
		}
		if v, ok := secret.Data[key]; ok {
			return v, nil
		}
		if v, ok := secret.StringData[key]; ok { // never stored, but harmless
			return []byte(v), nil
		}
		return nil, ErrMissingKey
	}
}

// helmReleasePrefix starts the names of Helm's release Secrets, which the
// manager's cache never holds (controllers.WatchScope).
const helmReleasePrefix = "sh.helm.release.v1."

// unselectedSecretError is a Secret not found among those the cache
// holds, which match selector.
type unselectedSecretError struct {
	err      error
	selector labels.Selector
}

func (e *unselectedSecretError) Error() string { return e.err.Error() }
func (e *unselectedSecretError) Unwrap() error { return e.err }

// SecretError says why a checker cannot be probed with the Secrets it
// refers to: a Secret or key is missing or unusable (ReasonSecretUnavailable),
// or Secret access is off (ReasonSecretAccessDisabled). Its message names
// Secrets and keys, never values.
type SecretError struct {
	Reason  probing.Reason
	Message string
}

func (e *SecretError) Error() string { return e.Message }

// SecretReadError is a failure to read a Secret that a retry may fix (the
// API server or the cache failed), as opposed to a *SecretError.
type SecretReadError struct{ err error }

func (e *SecretReadError) Error() string { return e.err.Error() }
func (e *SecretReadError) Unwrap() error { return e.err }

// SecretNames lists the names of the Secrets spec refers to, sorted and
// without duplicates.
func SecretNames(spec *webcheckerv1alpha1.WebCheckerSpec) []string {
	var names []string
	for _, h := range spec.Headers {
		if h.ValueFrom != nil {
			names = append(names, h.ValueFrom.SecretKeyRef.Name)
		}
	}
	if spec.BasicAuthSecretRef != nil {
		names = append(names, spec.BasicAuthSecretRef.Name)
	}
	if spec.BearerTokenSecretRef != nil {
		names = append(names, spec.BearerTokenSecretRef.Name)
	}
	if spec.TLS != nil && spec.TLS.CASecretRef != nil {
		names = append(names, spec.TLS.CASecretRef.Name)
	}
	if spec.TLS != nil && spec.TLS.ClientCertSecretRef != nil {
		names = append(names, spec.TLS.ClientCertSecretRef.Name)
	}
	if spec.OAuth2 != nil {
		names = append(names, spec.OAuth2.CredentialsSecretRef.Name)
	}
	if spec.Proxy != nil && spec.Proxy.CredentialsSecretRef != nil {
		names = append(names, spec.Proxy.CredentialsSecretRef.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// resolveSecrets sets the parts of target that may come from Secrets:
// headers, credentials, the CA bundle, the client certificate, the OAuth2
// client and spec.proxy (with its credentials).
func resolveSecrets(wc *webcheckerv1alpha1.WebChecker, secrets SecretValues, target *probing.TargetSpec) error {
	spec := &wc.Spec
	if names := SecretNames(spec); len(names) > 0 && secrets == nil {
		return &SecretError{
			Reason:  probing.ReasonSecretAccessDisabled,
			Message: fmt.Sprintf("the checker refers to Secret %s, but the operator runs with Secret access turned off", quoteAll(names)),
		}
	}
	target.Headers = nil
	for _, h := range spec.Headers {
		header := probing.Header{Name: h.Name, Value: probing.Secret(h.Value)}
		if ref := h.ValueFrom; ref != nil {
			v, err := secrets.line(fmt.Sprintf("spec.headers[%s]", h.Name), ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
			if err != nil {
				return err
			}
			header.Value, header.Sensitive = v, true
		}
		target.Headers = append(target.Headers, header)
	}
	if ref := spec.BasicAuthSecretRef; ref != nil {
		user, err := secrets.line("spec.basicAuthSecretRef", ref.Name, corev1.BasicAuthUsernameKey)
		if err != nil {
			return err
		}
		password, err := secrets.line("spec.basicAuthSecretRef", ref.Name, corev1.BasicAuthPasswordKey)
		if err != nil {
			return err
		}
		target.BasicAuth = &probing.BasicAuth{Username: user, Password: password}
	}
	if ref := spec.BearerTokenSecretRef; ref != nil {
		token, err := secrets.line("spec.bearerTokenSecretRef", ref.Name, ref.Key)
		if err != nil {
			return err
		}
		target.BearerToken = token
	}
	if spec.TLS != nil && spec.TLS.CASecretRef != nil {
		ref := spec.TLS.CASecretRef
		ca, err := secrets.value("spec.tls.caSecretRef", ref.Name, ref.Key)
		if err != nil {
			return err
		}
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return &SecretError{Reason: probing.ReasonSecretUnavailable,
				Message: fmt.Sprintf("spec.tls.caSecretRef: key %q of Secret %q holds no PEM-encoded certificate", ref.Key, ref.Name)}
		}
		target.TLS.RootCAs = ca
	}
	if err := clientCertificate(spec, secrets, target); err != nil {
		return err
	}
	if err := oauth2Grant(spec, secrets, target); err != nil {
		return err
	}
	proxy, err := proxyFor(spec, secrets)
	if err != nil {
		return err
	}
	target.Proxy = proxy
	return nil
}

// value reads key of the Secret name for the spec field field. A Secret or
// key that is missing is a *SecretError; a failed read a *SecretReadError.
func (secrets SecretValues) value(field, name, key string) ([]byte, error) {
	v, err := secrets(name, key)
	switch {
	case err == nil:
		return v, nil
	case apierrors.IsNotFound(err):
		msg := fmt.Sprintf("%s: Secret %q not found", field, name)
		var unselected *unselectedSecretError
		if errors.As(err, &unselected) {
			msg += fmt.Sprintf(" among the Secrets labelled %s", unselected.selector)
		}
		if strings.HasPrefix(name, helmReleasePrefix) {
			msg += " (Helm's release records are never read)"
		}
		return nil, &SecretError{Reason: probing.ReasonSecretUnavailable, Message: msg}
	case errors.Is(err, ErrMissingKey):
		return nil, &SecretError{Reason: probing.ReasonSecretUnavailable, Message: fmt.Sprintf("%s: Secret %q has no key %q", field, name, key)}
	default:
		return nil, &SecretReadError{fmt.Errorf("%s: reading Secret %q: %w", field, name, err)}
	}
}

// line reads a one-line value, as value does: a trailing line break (as
// left by kubectl create secret --from-file) is dropped, other control
// characters are refused.
func (secrets SecretValues) line(field, name, key string) (probing.Secret, error) {
	raw, err := secrets.value(field, name, key)
	if err != nil {
		return "", err
	}
	v := strings.TrimRight(string(raw), "\r\n")
	if strings.ContainsFunc(v, func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }) {
		return "", &SecretError{Reason: probing.ReasonSecretUnavailable,
			Message: fmt.Sprintf("%s: the value of key %q of Secret %q contains control characters", field, key, name)}
	}
	return probing.Secret(v), nil
}

func quoteAll(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(quoted, ", ")
}

// clientCertificate sets target's client certificate and key from the
// kubernetes.io/tls Secret spec.tls.clientCertSecretRef names, when it
// does. A pair that does not parse is a *SecretError that names the
// Secret, and nothing of its content.
func clientCertificate(spec *webcheckerv1alpha1.WebCheckerSpec, secrets SecretValues, target *probing.TargetSpec) error {
	if spec.TLS == nil || spec.TLS.ClientCertSecretRef == nil {
		return nil
	}
	const field = "spec.tls.clientCertSecretRef"
	name := spec.TLS.ClientCertSecretRef.Name
	cert, err := secrets.value(field, name, corev1.TLSCertKey)
	if err != nil {
		return err
	}
	key, err := secrets.value(field, name, corev1.TLSPrivateKeyKey)
	if err != nil {
		return err
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return &SecretError{Reason: probing.ReasonSecretUnavailable,
			Message: fmt.Sprintf("%s: Secret %q does not hold a PEM-encoded certificate (%s) and its private key (%s)", field, name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)}
	}
	target.TLS.ClientCertificate, target.TLS.ClientKey = cert, probing.Secret(key)
	return nil
}

// oauth2Grant sets target's OAuth2 grant from spec.oauth2, its client id
// and secret read from the Secret it names.
func oauth2Grant(spec *webcheckerv1alpha1.WebCheckerSpec, secrets SecretValues, target *probing.TargetSpec) error {
	o := spec.OAuth2
	if o == nil {
		return nil
	}
	const field = "spec.oauth2.credentialsSecretRef"
	id, err := secrets.line(field, o.CredentialsSecretRef.Name, webcheckerv1alpha1.OAuth2ClientIDKey)
	if err != nil {
		return err
	}
	secret, err := secrets.line(field, o.CredentialsSecretRef.Name, webcheckerv1alpha1.OAuth2ClientSecretKey)
	if err != nil {
		return err
	}
	grant := &probing.OAuth2{TokenURL: o.TokenURL, ClientID: id, ClientSecret: secret}
	for _, scope := range o.Scopes {
		grant.Scopes = append(grant.Scopes, string(scope))
	}
	target.OAuth2 = grant
	return nil
}
