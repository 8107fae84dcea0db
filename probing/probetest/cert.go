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

// Certificate is a generated self-signed certificate and its key.
type Certificate struct {
	// TLS is the certificate and key, for a tls.Config of a test server.
	TLS tls.Certificate
	// X509 is the parsed certificate.
	X509 *x509.Certificate
	// PEM is the PEM-encoded certificate, to trust it as a CA.
	PEM []byte
}

// NewCertificate generates a self-signed CA certificate for name, 127.0.0.1
// and ::1, valid from notBefore to notAfter (whole seconds, as X.509 keeps
// them). It fails t on error.
func NewCertificate(t testing.TB, name string, notBefore, notAfter time.Time) Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating key: %v", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("generating serial number: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             notBefore.Truncate(time.Second),
		NotAfter:              notAfter.Truncate(time.Second),
		DNSNames:              []string{name},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
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
	}
}
