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
	if len(o.ClientCertificate) > 0 || o.ClientKey != "" {
		pair, err := o.clientPair()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// errClientPair is why a client certificate and key cannot be used; a
// fixed text, so that nothing of the key shows in a message.
var errClientPair = errors.New("the client certificate and key are not a PEM-encoded certificate and its private key")

// clientPair parses o's client certificate and key, its leaf included.
func (o TLSOptions) clientPair() (tls.Certificate, error) {
	pair, err := tls.X509KeyPair(o.ClientCertificate, []byte(o.ClientKey.Reveal()))
	if err != nil || pair.Leaf == nil {
		return tls.Certificate{}, errClientPair
	}
	return pair, nil
}

func secureCipherSuites() []uint16 {
	var ids []uint16
	for _, s := range tls.CipherSuites() {
		ids = append(ids, s.ID)
	}
	return ids
}

// expiringCertificate returns the certificate whose expiry is the
// connection's, as the blackbox exporter's
// probe_ssl_last_chain_expiry_timestamp_seconds: of the chains that
// verification built (leaf to trusted root), the one that stays valid
// longest, and in it the certificate that expires first. Certificates the
// server sent that no verified chain needs (an old cross-sign, a stray
// intermediate) do not count. Without verified chains (InsecureSkipVerify)
// it is the leaf; nil without certificates.
func expiringCertificate(state *tls.ConnectionState) *x509.Certificate {
	if len(state.VerifiedChains) == 0 {
		if len(state.PeerCertificates) == 0 {
			return nil
		}
		return state.PeerCertificates[0]
	}
	var last *x509.Certificate
	for _, chain := range state.VerifiedChains {
		if first := earliestExpiry(chain); first != nil && (last == nil || first.NotAfter.After(last.NotAfter)) {
			last = first
		}
	}
	return last
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

// certificateExpiring returns the message of a certificate of the
// connection state (see expiringCertificate) that expires within warning
// of now (or expired already), "" when it does not. The message says
// which certificate by its place (the server's own, or a CA certificate
// of its chain) and names its expiry, which are stable between probes;
// not by its subject, which the server chose.
func certificateExpiring(state *tls.ConnectionState, cert *x509.Certificate, warning time.Duration, now time.Time) string {
	if cert == nil || warning <= 0 || cert.NotAfter.Sub(now) >= warning {
		return ""
	}
	which := "a CA certificate of the server's chain"
	if state != nil && len(state.PeerCertificates) > 0 && state.PeerCertificates[0].Equal(cert) {
		which = "the server's certificate"
	}
	expiry := cert.NotAfter.UTC().Format(time.RFC3339)
	if !cert.NotAfter.After(now) {
		return fmt.Sprintf("%s expired at %s", which, expiry)
	}
	return fmt.Sprintf("%s expires at %s, in less than %s", which, expiry, warning)
}
