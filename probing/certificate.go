package probing

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Certificate describes the certificate a server presented for itself
// (the leaf of the chain it sent), whether verification accepted it or
// not: what a user needs to tell an expired, a not yet valid and an
// untrusted certificate apart, and to see that it changed.
type Certificate struct {
	// NotBefore and NotAfter bound the certificate's validity.
	NotBefore, NotAfter time.Time
	// Issuer and Subject are the common names of its issuer and subject
	// when they are short printable names (see printableName), "" when
	// not: they are the server's choice.
	Issuer, Subject string
	// SerialNumber is the certificate's serial number, in lower-case hex.
	SerialNumber string
	// FingerprintSHA256 is the SHA-256 of its DER encoding, in lower-case
	// hex.
	FingerprintSHA256 string
	// Verified is true when verification accepted the chain, false when it
	// failed or was skipped (InsecureSkipVerify).
	Verified bool
}

// maxPrintableName bounds the certificate names a Certificate and a
// message keep.
const maxPrintableName = 64

// printableName returns name when it is at most maxPrintableName bytes of
// letters, digits, spaces and the punctuation of organisation and host
// names (. , - _ : ( ) ' & /), "" otherwise: a certificate's names are
// the server's choice, and a message or a label must not carry quotes,
// control characters or a page of text from it.
func printableName(name string) string {
	if len(name) > maxPrintableName {
		return ""
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == ' ', c == '.', c == ',', c == '-', c == '_', c == ':', c == '(', c == ')', c == '\'', c == '&', c == '/':
		default:
			return ""
		}
	}
	return name
}

// presentedCertificate describes the first certificate of chain (the
// server's own), nil for an empty chain.
func presentedCertificate(chain []*x509.Certificate, verified bool) *Certificate {
	if len(chain) == 0 {
		return nil
	}
	leaf := chain[0]
	sum := sha256.Sum256(leaf.Raw)
	c := &Certificate{
		NotBefore:         leaf.NotBefore,
		NotAfter:          leaf.NotAfter,
		Issuer:            printableName(leaf.Issuer.CommonName),
		Subject:           printableName(leaf.Subject.CommonName),
		FingerprintSHA256: hex.EncodeToString(sum[:]),
		Verified:          verified,
	}
	if leaf.SerialNumber != nil {
		c.SerialNumber = leaf.SerialNumber.Text(16)
	}
	return c
}

// setPresentedCertificate sets res.Certificate from a completed
// handshake; nothing without one.
func setPresentedCertificate(res *Result, state *tls.ConnectionState) {
	if state != nil {
		res.Certificate = presentedCertificate(state.PeerCertificates, len(state.VerifiedChains) > 0)
	}
}

// withUnverifiedChain returns res with the certificate a server
// presented when err is a failed verification of its chain: its
// Certificate, and as its CertificateExpiry the earliest expiry of the
// certificates it sent (as the blackbox exporter's
// probe_ssl_earliest_cert_expiry), so that an expired or untrusted
// certificate shows when it expires. Other errors leave res as it is.
func withUnverifiedChain(res Result, err error) Result {
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) || len(verr.UnverifiedCertificates) == 0 {
		return res
	}
	res.Certificate = presentedCertificate(verr.UnverifiedCertificates, false)
	if first := earliestExpiry(verr.UnverifiedCertificates); first != nil {
		expiry := first.NotAfter
		res.CertificateExpiry = &expiry
	}
	return res
}

// verificationText is the text of a failed verification of the chain
// a server presented: an expired or not yet valid certificate says which
// one (by its place in the chain), since and until when; other failures
// keep the fixed texts of certText. An unknown authority is not named:
// its name is the server's choice (Result.Certificate keeps it, for the
// metrics). Durations count whole days, so that the text
// changes at most once a day while the failure lasts.
func (s textScope) verificationText(e *tls.CertificateVerificationError, depth int, now time.Time) string {
	var invalid x509.CertificateInvalidError
	if errors.As(e.Err, &invalid) && invalid.Reason == x509.Expired && invalid.Cert != nil {
		which := placeIn(invalid.Cert, e.UnverifiedCertificates)
		if now.Before(invalid.Cert.NotBefore) {
			return fmt.Sprintf("x509: %s is not valid before %s (%s)", which, invalid.Cert.NotBefore.UTC().Format(time.RFC3339), inDays(invalid.Cert.NotBefore.Sub(now), "in "))
		}
		return fmt.Sprintf("x509: %s expired at %s (%s)", which, invalid.Cert.NotAfter.UTC().Format(time.RFC3339), inDays(now.Sub(invalid.Cert.NotAfter), "")+" ago")
	}
	return s.text(e.Err, depth+1)
}

// placeIn names cert by its place in the chain the server sent: its own
// certificate, or a CA certificate of its chain.
func placeIn(cert *x509.Certificate, chain []*x509.Certificate) string {
	if len(chain) > 0 && chain[0].Equal(cert) {
		return "the server's certificate"
	}
	return "a CA certificate of the server's chain"
}

// inDays says d in whole days after prefix ("in 3 days", "1 day"), or
// "less than a day".
func inDays(d time.Duration, prefix string) string {
	days := int(d / (24 * time.Hour))
	switch days {
	case 0:
		return prefix + "less than a day"
	case 1:
		return prefix + "1 day"
	}
	return fmt.Sprintf("%s%d days", prefix, days)
}
