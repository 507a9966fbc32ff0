package kafka

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/config"
)

// An unreadable or malformed PEM file fails start-up with an error naming the property
// that gave it, per-listener override included.
func TestServerTLSErrorsNameTheProperty(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name    string
		l       config.Listener
		key, in string
	}{
		{"missing keystore", config.Listener{Name: "SSL", Protocol: config.ProtocolSSL,
			Keystore: config.Setting{Value: missing, Key: "ssl.keystore.location"}}, "ssl.keystore.location", "cannot be read"},
		{"garbage keystore", config.Listener{Name: "SSL", Protocol: config.ProtocolSSL,
			Keystore: config.Setting{Value: garbage, Key: "listener.name.ssl.ssl.keystore.location"}},
			"listener.name.ssl.ssl.keystore.location", "does not hold a PEM certificate chain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ServerTLS(tt.l)
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(err.Error(), tt.in) || !strings.Contains(err.Error(), tt.l.Keystore.Value) {
				t.Fatalf("ServerTLS: %v; want a config error naming %s and the file, %q", err, tt.key, tt.in)
			}
		})
	}
	if _, err := loadTruststore(config.Setting{Value: garbage, Key: "ssl.truststore.location"}); err == nil ||
		!strings.Contains(err.Error(), "ssl.truststore.location") || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Fatalf("a truststore without certificates: %v", err)
	}
}
