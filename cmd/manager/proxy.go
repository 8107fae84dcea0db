package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
)

// maxProxyCredentialBytes bounds each file of --proxy-credentials-dir: a
// user name or password, not whatever a mistyped path names.
const maxProxyCredentialBytes = 4 << 10

// defaultProxy is the operator-wide proxy of the flags: --proxy-url and
// --no-proxy, with the credentials of --proxy-credentials-dir.
//
// The credentials are files, as kube-apiserver's --tls-private-key-file
// and Prometheus' password_file are: the kubelet mounts the Secret, so the
// manager needs no RBAC rule on Secrets for them (it works with
// --secret-access=false and any --watch-namespaces), and they are never on
// the command line (/proc/<pid>/cmdline, /debug/pprof/cmdline) nor in the
// environment, which child processes and crash dumps inherit.
func (o options) defaultProxy() (checkspec.DefaultProxy, error) {
	var credentials *probing.BasicAuth
	if o.proxyCredentialsDir != "" {
		var err error
		if credentials, err = readProxyCredentials(o.proxyCredentialsDir); err != nil {
			return checkspec.DefaultProxy{}, fmt.Errorf("--proxy-credentials-dir: %w", err)
		}
	}
	return checkspec.ParseDefaultProxy(o.proxyURL, o.noProxy, credentials)
}

// readProxyCredentials reads the files username and password of dir, as a
// kubernetes.io/basic-auth Secret mounted as a volume holds them. One
// trailing line break of each is ignored (kubectl create secret
// --from-file keeps the one an editor adds). Its errors never quote the
// files' contents.
func readProxyCredentials(dir string) (*probing.BasicAuth, error) {
	username, err := readCredentialFile(filepath.Join(dir, "username"))
	if err != nil {
		return nil, err
	}
	switch {
	case username == "":
		return nil, fmt.Errorf("%s is empty", filepath.Join(dir, "username"))
	case strings.Contains(username, ":"):
		// RFC 7617: the user-id of basic credentials cannot hold a colon.
		return nil, fmt.Errorf("%s holds a colon, which basic credentials cannot carry in a user name", filepath.Join(dir, "username"))
	}
	password, err := readCredentialFile(filepath.Join(dir, "password"))
	if err != nil {
		return nil, err
	}
	return &probing.BasicAuth{Username: probing.Secret(username), Password: probing.Secret(password)}, nil
}

// readCredentialFile returns the content of the file at path without one
// trailing line break, refusing one above maxProxyCredentialBytes.
func readCredentialFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err // *fs.PathError: the path and the cause
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProxyCredentialBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxProxyCredentialBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxProxyCredentialBytes)
	}
	s := strings.TrimSuffix(string(b), "\n")
	s = strings.TrimSuffix(s, "\r")
	if strings.ContainsAny(s, "\r\n") {
		return "", errors.New(path + " holds a line break")
	}
	return s, nil
}
