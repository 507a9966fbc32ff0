package link

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/runnel-io/runnel/internal/metadata"
)

// sourceOptions are the kgo options of a link's source client: its bootstrap and the
// client properties given with --source-X (librdkafka's names, as the client
// commands take them: docs/security.md). An unknown key or a bad value is an error
// naming it; the link refuses to start rather than connect without the security asked
// for.
//
// Config references in the properties (${file:PATH:KEY}, ${env:NAME}: secrets.go) are
// resolved here, on the node building the client. One that cannot be resolved on this
// node is an *UnresolvedError naming the link, the property and the reference (never a
// value): the link cannot start on this node (the Manager records why, and link status
// shows it on each partition this node leads), while another node may well resolve it.
// The keys are checked first, so an unknown key is reported as such even then.
func sourceOptions(l *metadata.Link) ([]kgo.Opt, error) {
	seeds := strings.Split(l.Source, ",")
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("runnel-link-" + l.Name),
		kgo.DialTimeout(5 * time.Second),
		kgo.RequestRetries(2),
		kgo.RetryTimeout(5 * time.Second),
		kgo.MetadataMinAge(time.Second),
	}
	resolved, rerr := resolveSourceProps(l.Name, l.SourceProps)
	if rerr != nil {
		resolved = l.SourceProps // still checked for unknown keys below
	}
	p := map[string]string{}
	for k, v := range resolved {
		if k == "sasl.mechanisms" {
			k = "sasl.mechanism"
		}
		switch k {
		case "security.protocol", "sasl.mechanism", "sasl.username", "sasl.password",
			"ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "enable.ssl.certificate.verification":
			p[k] = v
		default:
			return nil, fmt.Errorf("link %s: unknown source client property %q", l.Name, k)
		}
	}
	if rerr != nil {
		return nil, &UnresolvedError{Err: rerr}
	}
	proto := strings.ToLower(p["security.protocol"])
	if proto == "" {
		proto = "plaintext"
	}
	var useTLS, useSASL bool
	switch proto {
	case "plaintext":
	case "ssl":
		useTLS = true
	case "sasl_plaintext":
		useSASL = true
	case "sasl_ssl":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("link %s: security.protocol=%s: want plaintext, ssl, sasl_plaintext or sasl_ssl", l.Name, proto)
	}
	if useTLS {
		cfg, err := sourceTLS(l.Name, p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if useSASL {
		user, pass := p["sasl.username"], p["sasl.password"]
		switch m := strings.ToUpper(p["sasl.mechanism"]); m {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("link %s: sasl.mechanism=%s: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", l.Name, m)
		}
	}
	return opts, nil
}

func sourceTLS(link string, p map[string]string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := p["ssl.ca.location"]; ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("link %s: ssl.ca.location: %w", link, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("link %s: ssl.ca.location %s holds no PEM certificate", link, ca)
		}
		cfg.RootCAs = pool
	}
	cert, key := p["ssl.certificate.location"], p["ssl.key.location"]
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("link %s: ssl.certificate.location and ssl.key.location go together", link)
	}
	if cert != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("link %s: client certificate: %w", link, err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	if v := strings.ToLower(p["enable.ssl.certificate.verification"]); v == "false" {
		cfg.InsecureSkipVerify = true
	}
	return cfg, nil
}

// UnresolvedError is a config reference of a link's source properties that this node
// cannot resolve (a missing file, key or environment variable): a fault of this node's
// environment, not of the link's configuration, which another node may resolve.
type UnresolvedError struct{ Err error }

func (e *UnresolvedError) Error() string { return e.Err.Error() }
func (e *UnresolvedError) Unwrap() error { return e.Err }
