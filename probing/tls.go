package probing

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// tlsConfig returns the TLS client configuration of o; nil for the zero
// value (the transport's default).
func (o TLSOptions) tlsConfig() (*tls.Config, error) {
	if o.equal(TLSOptions{}) {
		return nil, nil
	}
	cfg := &tls.Config{
		InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // the user asked for it, per checker
		ServerName:         o.ServerName,
		MinVersion:         o.MinVersion,
	}
	if o.MinVersion != 0 && o.MinVersion < tls.VersionTLS12 {
		// Servers that old often speak only the RSA key exchange suites Go
		// offers when asked. The broken ones (RC4, 3DES) stay off.
		cfg.CipherSuites = secureCipherSuites()
	}
	if len(o.RootCAs) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.RootCAs) {
			return nil, errors.New("the CA bundle holds no PEM-encoded certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func secureCipherSuites() []uint16 {
	var ids []uint16
	for _, s := range tls.CipherSuites() {
		ids = append(ids, s.ID)
	}
	return ids
}

// earliestExpiry returns the certificate of chain that expires first, or
// nil for an empty chain.
func earliestExpiry(chain []*x509.Certificate) *x509.Certificate {
	var first *x509.Certificate
	for _, c := range chain {
		if first == nil || c.NotAfter.Before(first.NotAfter) {
			first = c
		}
	}
	return first
}

// certificateExpiring returns the message of a certificate that expires
// within warning of now (or expired already), "" when it does not. The
// message names only the certificate and its expiry, which are stable
// between probes.
func certificateExpiring(cert *x509.Certificate, warning time.Duration, now time.Time) string {
	if cert == nil || warning <= 0 || cert.NotAfter.Sub(now) >= warning {
		return ""
	}
	name := cert.Subject.CommonName
	if name == "" && len(cert.DNSNames) > 0 {
		name = cert.DNSNames[0]
	}
	expiry := cert.NotAfter.UTC().Format(time.RFC3339)
	if !cert.NotAfter.After(now) {
		return fmt.Sprintf("certificate %q expired at %s", name, expiry)
	}
	return fmt.Sprintf("certificate %q expires at %s, in less than %s", name, expiry, warning)
}
