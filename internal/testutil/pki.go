package testutil

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
	"os"
	"path/filepath"
	"testing"
	"time"
)

// NewCA makes a self-signed certificate authority named name, for tests' TLS.
func NewCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	return SignedCert(t, tmpl, nil, nil)
}

// SignedCert creates tmpl's certificate with a new P-256 key, signed by parent's key
// (self-signed when parent is nil), valid from an hour ago for a day.
func SignedCert(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, big.NewInt(1<<62)); err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatalf("creating certificate %s: %v", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// IssuePEM signs tmpl with the CA and writes dir/NAME.pem and dir/NAME-key.pem
// (PKCS #8), returning their paths.
func IssuePEM(t testing.TB, dir, name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	cert, key := SignedCert(t, tmpl, ca, caKey)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return WritePEM(t, dir, name+".pem", "CERTIFICATE", cert.Raw), WritePEM(t, dir, name+"-key.pem", "PRIVATE KEY", der)
}

// WritePEM writes der as one PEM block of type typ to dir/name and returns the path.
func WritePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// PKI is a CA made for one test, with a server certificate for 127.0.0.1 and
// localhost and a client certificate for CN=alice, all written as PEM files under the
// test's temporary directory. Keystore is the server certificate and its key in one
// file, as ssl.keystore.location takes them.
type PKI struct {
	CAFile                string // the CA certificate
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	OtherCA               string         // a second, unrelated CA: trusting it must fail
	Keystore              string         // ServerCert then ServerKey in one PEM file
	Pool                  *x509.CertPool // the CA, to check a node or a client
	Server                tls.Certificate
}

// NewPKI makes a PKI under t.TempDir().
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	p := &PKI{Pool: x509.NewCertPool()}
	ca, caKey := NewCA(t, "runnel test CA")
	p.Pool.AddCert(ca)
	p.CAFile = WritePEM(t, dir, "ca.pem", "CERTIFICATE", ca.Raw)
	other, _ := NewCA(t, "unrelated CA")
	p.OtherCA = WritePEM(t, dir, "other-ca.pem", "CERTIFICATE", other.Raw)
	srv := &x509.Certificate{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	p.ServerCert, p.ServerKey = IssuePEM(t, dir, "server", srv, ca, caKey)
	cli := &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	p.ClientCert, p.ClientKey = IssuePEM(t, dir, "client", cli, ca, caKey)
	var keystore []byte
	for _, f := range []string{p.ServerCert, p.ServerKey} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		keystore = append(keystore, b...)
	}
	p.Keystore = filepath.Join(dir, "keystore.pem")
	if err := os.WriteFile(p.Keystore, keystore, 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if p.Server, err = tls.X509KeyPair(keystore, keystore); err != nil {
		t.Fatalf("loading the test server certificate: %v", err)
	}
	return p
}

// ServerTLS is the TLS configuration of a broker with the test server certificate;
// clientAuth is tls.RequireAndVerifyClientCert for mTLS.
func (p *PKI) ServerTLS(clientAuth tls.ClientAuthType) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.Server}, ClientCAs: p.Pool, ClientAuth: clientAuth, MinVersion: tls.VersionTLS12}
}
