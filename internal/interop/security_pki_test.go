package interop_test

import (
	"crypto/ecdsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/runnel-io/runnel/internal/testutil"
)

// testPKI is a CA made for one test, with a server certificate for 127.0.0.1 and
// localhost and a client certificate for CN=alice, all written as PEM files under
// the test's temporary directory; keystore is the server certificate and its key in
// one file, as ssl.keystore.location takes them. (internal/cli's tests have the same
// helper: test files cannot be shared between packages.)
type testPKI struct {
	caFile                string // the CA certificate
	serverCert, serverKey string
	clientCert, clientKey string
	otherCA               string         // a second, unrelated CA: trusting it must fail
	pool                  *x509.CertPool // the CA, for a client that checks the node
	keystore              string         // serverCert then serverKey in one PEM file
	dir                   string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), pool: x509.NewCertPool()}
	ca, caKey := newCA(t, "runnel test CA")
	p.pool.AddCert(ca)
	p.caFile = p.writePEM(t, "ca.pem", "CERTIFICATE", ca.Raw)
	other, _ := newCA(t, "unrelated CA")
	p.otherCA = p.writePEM(t, "other-ca.pem", "CERTIFICATE", other.Raw)

	srv := &x509.Certificate{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	p.serverCert, p.serverKey = p.issue(t, "server", srv, ca, caKey)
	cli := &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	p.clientCert, p.clientKey = p.issue(t, "client", cli, ca, caKey)
	p.keystore = filepath.Join(p.dir, "keystore.pem")
	var keystore []byte
	for _, f := range []string{p.serverCert, p.serverKey} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		keystore = append(keystore, b...)
	}
	if err := os.WriteFile(p.keystore, keystore, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	return testutil.NewCA(t, name)
}

// issue signs tmpl with the CA and writes NAME.pem and NAME-key.pem.
func (p *testPKI) issue(t *testing.T, name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	return testutil.IssuePEM(t, p.dir, name, tmpl, ca, caKey)
}

func (p *testPKI) writePEM(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	return testutil.WritePEM(t, p.dir, name, typ, der)
}
