package probing

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// BuildURL returns the absolute URL probed for a WebChecker's host and
// path.
//
// host is "scheme://name[:port]" or a bare "name[:port]" (meaning http),
// optionally followed by "/"; name may be an IPv6 address in brackets
// ("[::1]:8080"). The scheme chooses the probe's Kind (see KindOfScheme): http,
// https, tcp, tls, grpc, grpcs or dns; tcp, tls, grpc and grpcs have no
// default port and need one. host must not carry credentials, another
// path, a query or a fragment. For http and https, path must start with
// "/" and may carry a query; empty means "/". The other kinds take no
// path: it must be empty.
//
// For example ("example.com:8080", "/healthz?full=1") gives
// "http://example.com:8080/healthz?full=1", and ("tcp://db:5432", "")
// gives "tcp://db:5432".
func BuildURL(host, path string) (string, error) {
	u, err := parseHost(host)
	if err != nil {
		return "", fmt.Errorf("build URL: invalid host %q: %w", host, err)
	}
	if kind, _ := KindOfScheme(u.Scheme); kind != KindHTTP {
		if path != "" {
			return "", fmt.Errorf("build URL: a path is only for http and https, not %s", u.Scheme)
		}
		return u.String(), nil
	}
	if err := setPath(u, path); err != nil {
		return "", fmt.Errorf("build URL: invalid path %q: %w", path, err)
	}
	return u.String(), nil
}

// parseHost parses BuildURL's host into a URL with a scheme and a host and
// nothing else.
func parseHost(host string) (*url.URL, error) {
	if host == "" {
		return nil, errors.New("empty")
	}
	raw := host
	if !strings.Contains(host, "://") {
		raw = "http://" + host
	}
	u, err := parseURL(raw)
	if err != nil {
		return nil, err
	}
	kind, known := KindOfScheme(u.Scheme)
	switch {
	case !known:
		return nil, fmt.Errorf("unsupported scheme %q (expected %s)", u.Scheme, expectedSchemes)
	case u.Opaque != "" || u.Hostname() == "":
		return nil, errors.New("missing host name")
	case u.User != nil:
		return nil, errors.New("credentials are not supported")
	case u.RawQuery != "" || u.ForceQuery:
		return nil, errors.New("a query belongs in the path")
	case u.Fragment != "" || strings.Contains(host, "#"):
		return nil, errors.New("fragments are not supported")
	case u.Path != "" && u.Path != "/":
		return nil, fmt.Errorf("unexpected path %q (the path is a separate field)", u.Path)
	case strings.HasSuffix(u.Host, ":"):
		return nil, errors.New("empty port")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("invalid port %q", port)
		}
	} else if _, ok := defaultPorts[u.Scheme]; !ok {
		return nil, fmt.Errorf("missing port (a %s URL has no default port)", u.Scheme)
	}
	if kind != KindHTTP {
		u.Path = ""
	}
	return u, nil
}

// setPath sets the path and query of u from BuildURL's path.
func setPath(u *url.URL, path string) error {
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		return errors.New(`must start with "/"`)
	}
	if strings.HasPrefix(path, "//") {
		return errors.New(`must not start with "//"`)
	}
	if strings.Contains(path, "#") {
		return errors.New("fragments are not supported")
	}
	ref, err := parseURL(path)
	if err != nil {
		return err
	}
	u.Path, u.RawPath = ref.Path, ref.RawPath
	u.RawQuery, u.ForceQuery = escapeQuery(ref.RawQuery), ref.ForceQuery
	return nil
}

// escapeQuery percent-encodes the bytes that url.Parse lets through in a
// query but that may not appear in a request line (spaces, control
// characters, non-ASCII bytes and "<>\^`{|}), which net/http would send as
// they are and servers refuse with 400. Everything else is kept as written.
func escapeQuery(q string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"<>\^`+"`{|}", c) >= 0 {
			if b.Len() == 0 {
				b.WriteString(q[:i])
			}
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return q
	}
	return b.String()
}

// webHostPort returns the host:port of the http or https URL u (a target,
// or a proxy), with the default port of its scheme (80 for http, 443 for
// https) when u names none.
func webHostPort(u *url.URL) string {
	if port := u.Port(); port != "" {
		return net.JoinHostPort(u.Hostname(), port)
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// parseTargetURL parses rawURL and returns it with its kind, or why it
// cannot be probed: it must be an absolute URL of a known scheme with a
// host. Its messages never contain the URL's password.
func parseTargetURL(rawURL string) (*url.URL, Kind, error) {
	if rawURL == "" {
		return nil, "", errors.New("empty URL")
	}
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("URL: %w", err)
	}
	kind, ok := KindOfScheme(u.Scheme)
	if !ok {
		return nil, "", fmt.Errorf("URL %q: unsupported scheme %q (expected %s)", u.Redacted(), u.Scheme, expectedSchemes)
	}
	if u.Hostname() == "" {
		return nil, "", fmt.Errorf("URL %q: missing host", u.Redacted())
	}
	if kind != KindHTTP {
		if n, err := strconv.Atoi(cmp.Or(u.Port(), defaultPorts[u.Scheme])); err != nil || n < 1 || n > 65535 {
			return nil, "", fmt.Errorf("URL %q: missing or invalid port (a %s URL has no default port)", u.Redacted(), u.Scheme)
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return nil, "", fmt.Errorf("URL %q: a %s URL has no path, query or fragment", u.Redacted(), u.Scheme)
		}
	}
	return u, kind, nil
}

// parseURL is url.Parse with an error that does not quote raw, which may
// hold a password (url.Parse's *url.Error repeats it).
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		_, cause := unwrapURLError(err)
		return nil, cause
	}
	return u, nil
}

// unwrapURLError returns the *url.Error in err's chain and the error it
// wraps; without one (or when it wraps nothing) it returns nil and err.
// A *url.Error's text is its Op and quoted URL before the wrapped error's.
func unwrapURLError(err error) (*url.Error, error) {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue, ue.Err
	}
	return nil, err
}

// redactURL returns u as net/http shows it in a *url.Error: with its
// password, if any, replaced by "***".
func redactURL(u *url.URL) string {
	if _, has := u.User.Password(); has {
		redacted := *u
		redacted.User = url.UserPassword(u.User.Username(), "***")
		return redacted.String()
	}
	return u.String()
}

// urlErrorOp is how net/http names a method in a *url.Error ("Get").
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// checkProxyURL reports why rawURL cannot be a probe's proxy: it must be
// http://host:port or https://host:port, without credentials (they are
// given apart), path, query or fragment.
func checkProxyURL(rawURL string) error {
	u, err := parseURL(rawURL)
	if err != nil {
		return fmt.Errorf("proxy URL: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("proxy URL %q: unsupported scheme %q (expected http or https)", u.Redacted(), u.Scheme)
	case u.Hostname() == "":
		return fmt.Errorf("proxy URL %q: missing host", u.Redacted())
	case u.User != nil:
		return fmt.Errorf("proxy URL %q: credentials are given apart, not in the URL", u.Redacted())
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("proxy URL %q: a proxy URL has no path, query or fragment", u.Redacted())
	}
	return nil
}
