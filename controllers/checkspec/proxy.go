package checkspec

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/networkio/webchecker/probing"
)

// DefaultProxy is the operator-wide proxy (--proxy-url, --no-proxy,
// --proxy-credentials-dir): the proxy of every checker without
// spec.proxy, except dns checkers and those whose host --no-proxy matches.
// It is never taken from the environment (HTTP_PROXY and the like): a
// probe goes through a proxy only when asked to. The zero value is no
// proxy.
type DefaultProxy struct {
	proxy   *probing.Proxy
	noProxy probing.NoProxy
}

// ParseDefaultProxy parses --proxy-url (http(s)://host:port; empty means
// no proxy) and --no-proxy (comma-separated host names, .domains, IP
// addresses, CIDR ranges or *, see probing.ParseNoProxy). credentials, when
// not nil, are the proxy's basic credentials (--proxy-credentials-dir).
//
// A URL with credentials (user:password@) is refused: a command line is
// readable by anyone who sees the process (/proc/<pid>/cmdline) and by
// anyone who reaches /debug/pprof/cmdline.
func ParseDefaultProxy(proxyURL, noProxy string, credentials *probing.BasicAuth) (DefaultProxy, error) {
	if proxyURL == "" {
		if strings.TrimSpace(noProxy) != "" {
			return DefaultProxy{}, errors.New("--no-proxy needs --proxy-url")
		}
		if credentials != nil {
			return DefaultProxy{}, errors.New("--proxy-credentials-dir needs --proxy-url")
		}
		return DefaultProxy{}, nil
	}
	// A URL read from a file or a Secret often ends with a line break.
	u, err := url.Parse(strings.TrimSpace(proxyURL))
	if err != nil {
		// url.Parse's error quotes the URL, password included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return DefaultProxy{}, fmt.Errorf("--proxy-url: %w", err)
	}
	if u.User != nil {
		return DefaultProxy{}, errors.New("--proxy-url must not hold credentials (user:password@), which any reader of the process's command line would see: " +
			"give them with --proxy-credentials-dir, a directory with the files username and password (a mounted kubernetes.io/basic-auth Secret)")
	}
	proxy := &probing.Proxy{URL: u.String()}
	if credentials != nil {
		proxy.Username, proxy.Password = credentials.Username, credentials.Password
	}
	if err := proxy.Validate(); err != nil {
		return DefaultProxy{}, fmt.Errorf("--proxy-url: %w", err)
	}
	d := DefaultProxy{proxy: proxy}
	if d.noProxy, err = probing.ParseNoProxy(noProxy); err != nil {
		return DefaultProxy{}, fmt.Errorf("--no-proxy %w", err)
	}
	return d, nil
}

// String describes d for logs, without credentials.
func (d DefaultProxy) String() string {
	if d.proxy == nil {
		return "none"
	}
	return d.proxy.URL
}

// For returns the proxy of a target URL: nil when d is no proxy or --no-proxy
// matches the URL's host.
func (d DefaultProxy) For(targetURL string) *probing.Proxy {
	if d.proxy == nil {
		return nil
	}
	u, err := url.Parse(targetURL)
	if err != nil {
		return nil
	}
	if d.noProxy.Matches(u.Hostname()) {
		return nil
	}
	p := *d.proxy
	return &p
}
