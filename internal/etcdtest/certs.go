package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test: a P-256 key and a
// self-signed certificate valid for a day.
type CA struct {
	// File is the CA certificate, PEM, for a TrustedCAFile.
	File string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA named name and writes its certificate into dir.
func NewCA(tb testing.TB, dir, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	ca := &CA{File: filepath.Join(dir, sanitize(name)+".crt"), cert: cert, key: key}
	writePEM(tb, ca.File, "CERTIFICATE", der)
	return ca
}

// Issue writes a certificate for common name cn and its key into dir and
// returns their paths. A server certificate is valid for 127.0.0.1 and
// localhost and also as a client (etcd peers dial each other with it); a
// client certificate is valid as a client only.
func (ca *CA) Issue(tb testing.TB, dir, cn string, server bool) (certFile, keyFile string) {
	tb.Helper()
	return ca.issue(tb, dir, cn, server, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// IssueExpired is Issue for a client certificate whose day of validity
// ended an hour ago.
func (ca *CA) IssueExpired(tb testing.TB, dir, cn string) (certFile, keyFile string) {
	tb.Helper()
	return ca.issue(tb, dir, cn, false, time.Now().Add(-25*time.Hour), time.Now().Add(-time.Hour))
}

// IssueNotYetValid is Issue for a client certificate whose day of
// validity begins in an hour.
func (ca *CA) IssueNotYetValid(tb testing.TB, dir, cn string) (certFile, keyFile string) {
	tb.Helper()
	return ca.issue(tb, dir, cn, false, time.Now().Add(time.Hour), time.Now().Add(25*time.Hour))
}

func (ca *CA) issue(tb testing.TB, dir, cn string, server bool, notBefore, notAfter time.Time) (certFile, keyFile string) {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	base := filepath.Join(dir, sanitize(cn))
	certFile, keyFile = base+".crt", base+".key"
	writePEM(tb, certFile, "CERTIFICATE", der)
	writePEM(tb, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func writePEM(tb testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// sanitize makes a common name usable as a file name.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
