package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The client properties of INTERFACE.md ("Security options of the client commands"),
// with librdkafka's names and meanings, so that the -X arguments of a kcat command line
// and the lines of a Kafka tool's --command-config file work here unchanged.
const (
	propProtocol  = "security.protocol"
	propMechanism = "sasl.mechanism"
	propUsername  = "sasl.username"
	propPassword  = "sasl.password"
	propCA        = "ssl.ca.location"
	propCert      = "ssl.certificate.location"
	propKey       = "ssl.key.location"
	propVerify    = "enable.ssl.certificate.verification"
)

// clientPropertyKeys are the keys in the order the help and the errors list them.
var clientPropertyKeys = []string{propProtocol, propMechanism, propUsername, propPassword,
	propCA, propCert, propKey, propVerify}

// propertyAliases maps the other spellings librdkafka accepts to the key above:
// kcat's documentation writes sasl.mechanisms (plural, librdkafka's main name).
var propertyAliases = map[string]string{"sasl.mechanisms": propMechanism}

// Security protocols, as security.protocol takes them (case-insensitive, as
// librdkafka); the lower-case forms are the canonical ones.
const (
	protoPlaintext     = "plaintext"
	protoSSL           = "ssl"
	protoSASLPlaintext = "sasl_plaintext"
	protoSASLSSL       = "sasl_ssl"
)

// SASL mechanisms, as sasl.mechanism takes them (case-insensitive).
const (
	mechPlain    = "PLAIN"
	mechScram256 = "SCRAM-SHA-256"
	mechScram512 = "SCRAM-SHA-512"
)

// clientSecurity is one side's checked security settings. The zero value is plaintext
// without authentication, what a command does when given no property.
type clientSecurity struct {
	protocol           string // one of the proto* constants ("" reads as plaintext)
	mechanism          string // one of the mech* constants; set iff the protocol is SASL
	username, password string
	caFile             string // PEM CA certificates; "" trusts the system's roots
	certFile, keyFile  string // PEM client certificate and key, both or neither
	noVerify           bool   // enable.ssl.certificate.verification=false
}

func (s clientSecurity) usesTLS() bool { return s.protocol == protoSSL || s.protocol == protoSASLSSL }
func (s clientSecurity) usesSASL() bool {
	return s.protocol == protoSASLPlaintext || s.protocol == protoSASLSSL
}

// securityFlags are one side's -X KEY=VALUE and --command-config FILE flags. The
// client commands take them as -X/--property and --command-config; runnel mirror takes
// one set per cluster, as --source-X/--source-command-config and
// --target-X/--target-command-config.
type securityFlags struct {
	propFlag, fileFlag string   // the flags' names, as messages name them ("-X", "--source-X")
	props              []string // -X values, in command-line order
	file               string   // --command-config

	// The options are built once: several clients of one command (bench's producers)
	// share them, and a bad property fails the first one before anything connects.
	once sync.Once
	opts []kgo.Opt
	err  error
}

// addSecurityFlags registers the security flags on fs. prefix is "" for a client
// command (-X, --property, --command-config) or "source-"/"target-" for a mirror side
// (--source-X, --source-command-config, ...).
func addSecurityFlags(fs *pflag.FlagSet, prefix, side string) *securityFlags {
	s := &securityFlags{propFlag: "--" + prefix + "X", fileFlag: "--" + prefix + "command-config"}
	// The back-quoted words are the placeholders the help shows (pflag's convention).
	propUsage := fmt.Sprintf("%sclient property `KEY=VALUE`, repeatable, wins over the file (%s)", side, strings.Join(clientPropertyKeys, ", "))
	fileUsage := side + "client properties from a properties `FILE` (as Kafka's tools' --command-config)"
	if prefix == "" {
		s.propFlag = "-X"
		fs.StringArrayVarP(&s.props, "property", "X", nil, propUsage)
	} else {
		fs.StringArrayVar(&s.props, prefix+"X", nil, propUsage)
	}
	fs.StringVar(&s.file, prefix+"command-config", "", fileUsage)
	return s
}

// options returns the kgo options for the flags' security settings: none for
// plaintext, DialTLSConfig for SSL, SASL for SASL. Every problem is a usage error
// (exit 2) naming the flag, the key and, for a file, its path. A nil s has no options.
func (s *securityFlags) options() ([]kgo.Opt, error) {
	if s == nil {
		return nil, nil
	}
	s.once.Do(func() {
		var sec clientSecurity
		if sec, s.err = s.parse(); s.err == nil {
			s.opts, s.err = sec.options()
		}
	})
	return s.opts, s.err
}

// parse reads --command-config, then applies -X over it, and checks the result.
func (s *securityFlags) parse() (clientSecurity, error) {
	props := map[string]property{}
	if s.file != "" {
		f, err := os.Open(s.file)
		if err != nil {
			return clientSecurity{}, usageErrorf("%s: %v", s.fileFlag, err)
		}
		defer f.Close()
		fileProps, err := config.ParseProperties(f)
		if err != nil {
			// The parser quotes the bad value; a password's stays out of the message.
			if ce := (*config.Error)(nil); errors.As(err, &ce) && ce.Key == propPassword {
				err = fmt.Errorf("%s has a malformed \\uXXXX escape", propPassword)
			}
			return clientSecurity{}, usageErrorf("%s %s: %v", s.fileFlag, s.file, err)
		}
		// Sorted, so that of two bad keys the same one is reported every time.
		for _, k := range slices.Sorted(maps.Keys(fileProps)) {
			if err := setProperty(props, k, fileProps[k], s.fileFlag+" "+s.file+": "); err != nil {
				return clientSecurity{}, err
			}
		}
	}
	for _, kv := range s.props {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return clientSecurity{}, usageErrorf("bad %s %q: want KEY=VALUE", s.propFlag, kv)
		}
		if err := setProperty(props, strings.TrimSpace(k), v, s.propFlag+" "); err != nil {
			return clientSecurity{}, err
		}
	}
	return checkSecurity(props)
}

// property is one client property's value and where it was given, for the messages:
// "-X " or "--command-config client.properties: ".
type property struct {
	value, origin string
}

// setProperty stores key=value from origin in props, refusing an unknown key. A key
// given again (in -X after the file, or twice in -X) replaces the earlier value, as
// in librdkafka.
func setProperty(props map[string]property, key, value, origin string) error {
	if alias, ok := propertyAliases[key]; ok {
		key = alias
	}
	if !slices.Contains(clientPropertyKeys, key) {
		return usageErrorf("%sunknown client property %q (known: %s)", origin, key, strings.Join(clientPropertyKeys, ", "))
	}
	props[key] = property{value: value, origin: origin}
	return nil
}

// checkSecurity turns the properties into settings. Values are checked one by one,
// then together: SASL properties need a SASL protocol and SSL properties an SSL one
// (a setting that would be silently ignored is refused, since a user who gives a CA
// or a password expects it used); a SASL protocol needs a mechanism, a username and a
// password; a client certificate needs its key and the other way round.
func checkSecurity(props map[string]property) (clientSecurity, error) {
	var s clientSecurity
	get := func(key string) string { return props[key].value }
	bad := func(key, why string) error {
		p := props[key]
		return usageErrorf("%s%s=%s: %s", p.origin, key, p.value, why)
	}
	s.protocol = protoPlaintext
	if p, ok := props[propProtocol]; ok {
		switch v := strings.ToLower(strings.TrimSpace(p.value)); v {
		case protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL:
			s.protocol = v
		default:
			return s, bad(propProtocol, "want plaintext, ssl, sasl_plaintext or sasl_ssl")
		}
	}
	if p, ok := props[propMechanism]; ok {
		switch v := strings.ToUpper(strings.TrimSpace(p.value)); v {
		case mechPlain, mechScram256, mechScram512:
			s.mechanism = v
		default:
			return s, bad(propMechanism, "want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
		}
	}
	if p, ok := props[propVerify]; ok {
		switch strings.ToLower(strings.TrimSpace(p.value)) {
		case "true":
		case "false":
			s.noVerify = true
		default:
			return s, bad(propVerify, "want true or false")
		}
	}
	s.username, s.password = get(propUsername), get(propPassword)
	s.caFile, s.certFile, s.keyFile = get(propCA), get(propCert), get(propKey)
	for _, key := range []string{propCA, propCert, propKey} {
		if p, ok := props[key]; ok && p.value == "" {
			return s, bad(key, "the file name is empty")
		}
	}
	return s, checkCombination(s, props)
}

// checkCombination checks the settings against each other (see checkSecurity).
func checkCombination(s clientSecurity, props map[string]property) error {
	for _, key := range []string{propMechanism, propUsername, propPassword} {
		if p, ok := props[key]; ok && !s.usesSASL() {
			return usageErrorf("%s%s is set but security.protocol is %s: SASL needs security.protocol=sasl_ssl or sasl_plaintext", p.origin, key, s.protocol)
		}
	}
	for _, key := range []string{propCA, propCert, propKey, propVerify} {
		if p, ok := props[key]; ok && !s.usesTLS() {
			return usageErrorf("%s%s is set but security.protocol is %s: TLS needs security.protocol=ssl or sasl_ssl", p.origin, key, s.protocol)
		}
	}
	if s.usesSASL() {
		if s.mechanism == "" {
			return usageErrorf("security.protocol=%s needs sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", s.protocol)
		}
		for _, key := range []string{propUsername, propPassword} {
			p, ok := props[key]
			switch {
			case !ok:
				return usageErrorf("sasl.mechanism=%s needs sasl.username and sasl.password: %s is missing", s.mechanism, key)
			case p.value == "":
				return usageErrorf("%s%s is empty: sasl.mechanism=%s needs a username and a password", p.origin, key, s.mechanism)
			}
		}
	}
	if (s.certFile == "") != (s.keyFile == "") {
		have, missing := propCert, propKey
		if s.certFile == "" {
			have, missing = propKey, propCert
		}
		return usageErrorf("%s%s is set without %s: a client certificate needs both", props[have].origin, have, missing)
	}
	return nil
}

// options builds the kgo options for s, reading the PEM files.
func (s clientSecurity) options() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if s.usesTLS() {
		cfg, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.usesSASL() {
		opts = append(opts, kgo.SASL(s.saslMechanism()))
	}
	return opts, nil
}

// tlsConfig is the TLS client configuration: the CA file's certificates as the only
// roots (the system's without one), the client certificate if given, and no
// verification of the broker's certificate only when asked. kgo sets ServerName to
// each broker's host per dial, so the broker's certificate is checked against the
// address the client dials (bootstrap or advertised), as librdkafka and Java do.
func (s clientSecurity) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.noVerify} //nolint:gosec // only when enable.ssl.certificate.verification=false asks for it
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return nil, usageErrorf("%s: %v", propCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErrorf("%s %s: no PEM certificate in the file", propCA, s.caFile)
		}
		cfg.RootCAs = pool
	}
	if s.certFile != "" {
		// Stat first, so that a missing file is named by its key, which
		// LoadX509KeyPair's error does not do.
		for _, f := range [...]struct{ key, file string }{{propCert, s.certFile}, {propKey, s.keyFile}} {
			if _, err := os.Stat(f.file); err != nil {
				return nil, usageErrorf("%s: %v", f.key, err)
			}
		}
		cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return nil, usageErrorf("%s %s with %s %s: %v", propCert, s.certFile, propKey, s.keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// saslMechanism is franz-go's client side of s's mechanism.
func (s clientSecurity) saslMechanism() sasl.Mechanism {
	switch s.mechanism {
	case mechScram256:
		return scram.Auth{User: s.username, Pass: s.password}.AsSha256Mechanism()
	case mechScram512:
		return scram.Auth{User: s.username, Pass: s.password}.AsSha512Mechanism()
	default: // checkSecurity let only the three through
		return plain.Auth{User: s.username, Pass: s.password}.AsMechanism()
	}
}
