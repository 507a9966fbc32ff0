package cli

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"testing"

	"github.com/runnel-io/runnel/internal/testutil"
)

// testPKI is a CA made for one test, with a server certificate for 127.0.0.1 and
// localhost and a client certificate for CN=alice, all written as PEM files under
// the test's temporary directory.
type testPKI struct {
	caFile                string // the CA certificate
	serverCert, serverKey string
	clientCert, clientKey string
	otherCA               string // a second, unrelated CA: trusting it must fail
	server                tls.Certificate
	pool                  *x509.CertPool // the CA, for a server that checks clients
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
	var err error
	if p.server, err = tls.LoadX509KeyPair(p.serverCert, p.serverKey); err != nil {
		t.Fatalf("loading the test server certificate: %v", err)
	}
	return p
}

// serverTLS is the TLS configuration of a broker with the test server certificate;
// clientAuth is tls.RequireAndVerifyClientCert for mTLS.
func (p *testPKI) serverTLS(clientAuth tls.ClientAuthType) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.server}, ClientCAs: p.pool, ClientAuth: clientAuth, MinVersion: tls.VersionTLS12}
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
