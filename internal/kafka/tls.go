package kafka

// TLS from PEM files: a listener's certificate chain and key (ssl.keystore.location,
// one file holding both) and the CAs it verifies client certificates against
// (ssl.truststore.location). The files are read once, at start-up; an unreadable or
// malformed file fails start-up with an error naming the property that gave it.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/runnel-io/runnel/internal/config"
)

// ServerTLS is the server side of TLS on listener l (an SSL or SASL_SSL listener):
// its keystore's certificate, and with ssl.client.auth requested or required the
// truststore's CAs to verify client certificates. TLS 1.2 at least, as Kafka's default
// ssl.enabled.protocols.
func ServerTLS(l config.Listener) (*tls.Config, error) {
	cert, err := loadKeystore(l.Keystore)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch l.ClientAuth.Value {
	case config.ClientAuthRequired:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case config.ClientAuthRequested:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		return cfg, nil
	}
	if cfg.ClientCAs, err = loadTruststore(l.Truststore); err != nil {
		return nil, err
	}
	return cfg, nil
}

// PeerTLS is the client side of TLS to another node's inter-broker listener, nil when
// that listener is not TLS: the other node's certificate is verified against the
// inter-broker listener's truststore (the system's CAs when it has none), and this
// node presents its own keystore certificate when the other asks for one
// (ssl.client.auth there).
func PeerTLS(b *config.Broker) (*tls.Config, error) {
	l := b.InterBroker()
	if !l.IsTLS() {
		return nil, nil
	}
	cert, err := loadKeystore(l.Keystore)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if l.Truststore.Value != "" {
		if cfg.RootCAs, err = loadTruststore(l.Truststore); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// loadKeystore reads a certificate chain and its private key from one PEM file.
func loadKeystore(s config.Setting) (tls.Certificate, error) {
	pem, err := os.ReadFile(s.Value)
	if err != nil {
		return tls.Certificate{}, pemError(s, "cannot be read", err)
	}
	// X509KeyPair takes the CERTIFICATE blocks from its first argument and the key
	// block from its second, skipping the others, so one file serves as both.
	cert, err := tls.X509KeyPair(pem, pem)
	if err != nil {
		return tls.Certificate{}, pemError(s, "does not hold a PEM certificate chain and its unencrypted private key", err)
	}
	return cert, nil
}

// loadTruststore reads CA certificates from a PEM file.
func loadTruststore(s config.Setting) (*x509.CertPool, error) {
	pem, err := os.ReadFile(s.Value)
	if err != nil {
		return nil, pemError(s, "cannot be read", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, pemError(s, "holds no PEM certificate", nil)
	}
	return pool, nil
}

// pemError is a start-up error naming the property that gave the file.
func pemError(s config.Setting, what string, err error) error {
	reason := what
	if err != nil {
		reason += ": " + err.Error()
	}
	return &config.Error{Key: s.Key, Value: s.Value, Reason: reason}
}

// certificatePrincipal is the user name of a client authenticated by its certificate:
// the subject of its leaf certificate in RFC 2253 form (CN=alice,O=example), as
// Kafka's default principal builder gives it; "" without a certificate.
func certificatePrincipal(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return ""
	}
	return cs.PeerCertificates[0].Subject.String()
}

// tlsHandshakeTimeout bounds a new connection's TLS handshake: a client that connects
// and sends nothing holds no goroutine past it.
const tlsHandshakeTimeout = 10 * time.Second

// handshake runs the TLS handshake on a TLS listener's connection before any request
// is read, and takes a client certificate's subject as the connection's user. A
// handshake that fails (no certificate where one is required, an unknown CA, not TLS
// at all) closes the connection; the caller logs why.
func (c *conn) handshake() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake on listener %s: %w", c.listener.cfg.Name, err)
	}
	if user := certificatePrincipal(tc.ConnectionState()); user != "" {
		c.user = user
	}
	return nil
}
