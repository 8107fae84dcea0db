package probetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// Certificate is a generated certificate and its key.
type Certificate struct {
	// TLS is the certificate and key, for a tls.Config of a test server.
	TLS tls.Certificate
	// X509 is the parsed certificate.
	X509 *x509.Certificate
	// PEM is the PEM-encoded certificate, to trust it as a CA.
	PEM []byte
	// Key is the certificate's private key.
	Key *ecdsa.PrivateKey
}

// NewCertificate generates a self-signed CA certificate for name, 127.0.0.1
// and ::1, valid from notBefore to notAfter (whole seconds, as X.509 keeps
// them). It fails t on error.
func NewCertificate(t testing.TB, name string, notBefore, notAfter time.Time) Certificate {
	t.Helper()
	return CertificateTemplate{Name: name, NotBefore: notBefore, NotAfter: notAfter}.Issue(t)
}

// CertificateTemplate describes a certificate to Issue, for chains of
// certificates: roots, intermediates, cross-signs and leaves.
type CertificateTemplate struct {
	// Name is the subject's common name and the certificate's DNS name; the
	// certificate is also valid for 127.0.0.1 and ::1.
	Name string
	// NotBefore and NotAfter bound the validity (whole seconds, as X.509
	// keeps them).
	NotBefore, NotAfter time.Time
	// Issuer signs the certificate; nil makes it self-signed.
	Issuer *Certificate
	// Key is the certificate's key; nil generates one. With the key and
	// Name of another certificate, the new one is a cross-sign of it: the
	// same subject and key, another issuer.
	Key *ecdsa.PrivateKey
	// Leaf makes an end-entity certificate; by default it is a CA.
	Leaf bool
	// Client makes the certificate valid for TLS clients too (mutual
	// TLS), not only for servers.
	Client bool
}

// Issue generates the certificate. It fails t on error.
func (c CertificateTemplate) Issue(t testing.TB) Certificate {
	t.Helper()
	key := c.Key
	if key == nil {
		var err error
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatalf("generating key: %v", err)
		}
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("generating serial number: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: c.Name},
		NotBefore:             c.NotBefore.Truncate(time.Second),
		NotAfter:              c.NotAfter.Truncate(time.Second),
		DNSNames:              []string{c.Name},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if c.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	if !c.Leaf {
		tmpl.IsCA = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	parent, signer := tmpl, key
	if c.Issuer != nil {
		parent, signer = c.Issuer.X509, c.Issuer.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatalf("creating certificate: %v", err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parsing certificate: %v", err)
	}
	return Certificate{
		TLS:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: parsed},
		X509: parsed,
		PEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  key,
	}
}

// KeyPEM returns c's private key, PEM-encoded (SEC 1, "EC PRIVATE
// KEY"), as a kubernetes.io/tls Secret's tls.key holds it. It fails t
// on error.
func (c Certificate) KeyPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(c.Key)
	if err != nil {
		t.Fatalf("encoding key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// Chain returns the TLS certificate a server presents: leaf's key, and
// leaf followed by extra, in that order, as sent in the handshake.
func Chain(leaf Certificate, extra ...Certificate) tls.Certificate {
	chain := tls.Certificate{Certificate: [][]byte{leaf.X509.Raw}, PrivateKey: leaf.Key, Leaf: leaf.X509}
	for _, c := range extra {
		chain.Certificate = append(chain.Certificate, c.X509.Raw)
	}
	return chain
}
