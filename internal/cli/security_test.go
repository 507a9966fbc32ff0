package cli

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runnel-io/runnel/internal/testutil"
)

// writeFile writes content to name under dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestClientPropertyErrors: every bad security setting fails before anything
// connects, with exit status 2 and one line naming the flag and the key, and never
// echoes the password.
func TestClientPropertyErrors(t *testing.T) {
	pki := testutil.NewPKI(t)
	dir := t.TempDir()
	notPEM := writeFile(t, dir, "not.pem", "hello\n")
	jaas := writeFile(t, dir, "jaas.properties", "security.protocol=SASL_SSL\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n")
	badVerify := writeFile(t, dir, "verify.properties", "security.protocol=ssl\nenable.ssl.certificate.verification=maybe\n")
	badEscape := writeFile(t, dir, "escape.properties", "security.protocol=sasl_ssl\nsasl.password=s3cret\\u12\n")
	sasl := []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=SCRAM-SHA-512"}
	for _, tt := range []struct {
		name string
		args []string
		want string // the message, after "runnel: "
	}{
		{"unknown key", []string{"-X", "sasl.mechansim=PLAIN"},
			`-X unknown client property "sasl.mechansim" (known: security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location, ssl.certificate.location, ssl.key.location, enable.ssl.certificate.verification)`},
		{"no equals sign", []string{"-X", "security.protocol"}, `bad -X "security.protocol": want KEY=VALUE`},
		{"bad protocol", []string{"-X", "security.protocol=tls"}, `-X security.protocol=tls: want plaintext, ssl, sasl_plaintext or sasl_ssl`},
		{"bad mechanism", []string{"-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=GSSAPI"},
			`-X sasl.mechanism=GSSAPI: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`},
		{"no mechanism", []string{"-X", "security.protocol=sasl_ssl", "-X", "sasl.username=alice", "-X", "sasl.password=s3cret"},
			`security.protocol=sasl_ssl needs sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)`},
		{"no username", append(sasl, "-X", "sasl.password=s3cret"),
			`sasl.mechanism=SCRAM-SHA-512 needs sasl.username and sasl.password: sasl.username is missing`},
		{"no password", append(sasl, "-X", "sasl.username=alice"),
			`sasl.mechanism=SCRAM-SHA-512 needs sasl.username and sasl.password: sasl.password is missing`},
		{"empty password", append(sasl, "-X", "sasl.username=alice", "-X", "sasl.password="),
			`-X sasl.password is empty: sasl.mechanism=SCRAM-SHA-512 needs a username and a password`},
		{"sasl without a sasl protocol", []string{"-X", "security.protocol=ssl", "-X", "sasl.password=s3cret"},
			`-X sasl.password is set but security.protocol is ssl: SASL needs security.protocol=sasl_ssl or sasl_plaintext`},
		{"tls without a tls protocol", []string{"-X", "ssl.ca.location=" + pki.CAFile},
			`-X ssl.ca.location is set but security.protocol is plaintext: TLS needs security.protocol=ssl or sasl_ssl`},
		{"missing CA file", []string{"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + dir + "/none.pem"},
			`ssl.ca.location: open ` + dir + `/none.pem: no such file or directory`},
		{"CA file not PEM", []string{"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + notPEM},
			`ssl.ca.location ` + notPEM + `: no PEM certificate in the file`},
		{"certificate without key", []string{"-X", "security.protocol=ssl", "-X", "ssl.certificate.location=" + pki.ClientCert},
			`-X ssl.certificate.location is set without ssl.key.location: a client certificate needs both`},
		{"missing key file", []string{"-X", "security.protocol=ssl", "-X", "ssl.certificate.location=" + pki.ClientCert, "-X", "ssl.key.location=" + dir + "/none-key.pem"},
			`ssl.key.location: stat ` + dir + `/none-key.pem: no such file or directory`},
		{"key of another certificate", []string{"-X", "security.protocol=ssl", "-X", "ssl.certificate.location=" + pki.ClientCert, "-X", "ssl.key.location=" + pki.ServerKey},
			`ssl.certificate.location ` + pki.ClientCert + ` with ssl.key.location ` + pki.ServerKey + `: tls: private key does not match public key`},
		{"missing command config", []string{"--command-config", dir + "/none.properties"},
			`--command-config: open ` + dir + `/none.properties: no such file or directory`},
		{"unknown key in the file", []string{"--command-config", jaas},
			`--command-config ` + jaas + `: unknown client property "sasl.jaas.config" (known: security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location, ssl.certificate.location, ssl.key.location, enable.ssl.certificate.verification)`},
		{"bad value in the file", []string{"--command-config", badVerify},
			`--command-config ` + badVerify + `: enable.ssl.certificate.verification=maybe: want true or false`},
		{"bad escape in the file's password", []string{"--command-config", badEscape},
			`--command-config ` + badEscape + `: sasl.password has a malformed \uXXXX escape`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Port 1: nothing listens there, so a command that got past the checks
			// would fail with a connection error and exit 1, not 2.
			for _, cmd := range [][]string{{"topic", "list"}, {"produce", "t"}, {"consume", "t", "-n", "1"}, {"bench", "produce"}} {
				args := append(append(cmd, "-b", "127.0.0.1:1"), tt.args...)
				r := run(t, "x\n", args...)
				first, _, _ := strings.Cut(r.stderr, "\n")
				if r.code != 2 || first != "runnel: "+tt.want {
					t.Errorf("runnel %s: exit %d, stderr %q; want exit 2 and first line %q", strings.Join(args, " "), r.code, r.stderr, "runnel: "+tt.want)
				}
				if strings.Contains(r.stderr, "s3cret") {
					t.Errorf("runnel %s: the password is in the error: %q", strings.Join(args, " "), r.stderr)
				}
			}
		})
	}
}

// TestMirrorSideProperties: runnel mirror checks each side's properties under that
// side's flag names, in run and in the commands that read the target only.
func TestMirrorSideProperties(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"mirror", "run", "--source", "127.0.0.1:1", "--target", "127.0.0.1:2", "--name", "m", "--source-X", "security.protocol=tls"},
			`--source-X security.protocol=tls: want plaintext, ssl, sasl_plaintext or sasl_ssl`},
		{[]string{"mirror", "run", "--source", "127.0.0.1:1", "--target", "127.0.0.1:2", "--name", "m", "--target-X", "sasl.user=alice"},
			`--target-X unknown client property "sasl.user"`},
		{[]string{"mirror", "run", "--source", "127.0.0.1:1", "--target", "127.0.0.1:2", "--name", "m", "--source-command-config", dir + "/none"},
			`--source-command-config: open ` + dir + `/none: no such file or directory`},
		{[]string{"mirror", "status", "--target", "127.0.0.1:2", "--name", "m", "--target-X", "security.protocol=sasl_ssl"},
			`security.protocol=sasl_ssl needs sasl.mechanism`},
		{[]string{"mirror", "failover", "--target", "127.0.0.1:2", "--name", "m", "--all-groups", "--target-command-config", dir + "/none"},
			`--target-command-config: open ` + dir + `/none: no such file or directory`},
		{[]string{"mirror", "translate", "--target", "127.0.0.1:2", "--name", "m", "--topic", "t", "--partition", "0", "--offset", "1", "--target-X", "x=y"},
			`--target-X unknown client property "x"`},
	} {
		r := run(t, "", tt.args...)
		first, _, _ := strings.Cut(r.stderr, "\n")
		if r.code != 2 || !strings.HasPrefix(first, "runnel: "+tt.want) {
			t.Errorf("runnel %s: exit %d, stderr %q; want exit 2 and a first line starting %q", strings.Join(tt.args, " "), r.code, r.stderr, "runnel: "+tt.want)
		}
	}
}

// TestClientPropertyMerge: the file is read first and -X overrides it key by key;
// values are case-insensitive as in librdkafka, and sasl.mechanisms is
// sasl.mechanism.
func TestClientPropertyMerge(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "client.properties", `# a Kafka tool's command config
security.protocol = SASL_PLAINTEXT
sasl.mechanism: scram-sha-256
sasl.username=alice
sasl.password=from-file
`)
	s := &securityFlags{propFlag: "-X", fileFlag: "--command-config", file: file,
		props: []string{"sasl.password=from=flag", "sasl.mechanisms=Scram-Sha-512"}}
	got, err := s.parse()
	if err != nil {
		t.Fatal(err)
	}
	want := clientSecurity{protocol: protoSASLPlaintext, mechanism: mechScram512, username: "alice", password: "from=flag"}
	if got != want {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
	if got, err := (&securityFlags{}).parse(); err != nil || got != (clientSecurity{protocol: protoPlaintext}) {
		t.Fatalf("no property: %+v, %v; want plaintext", got, err)
	}
}

// securedKfake starts a kfake cluster that serves TLS with the test server
// certificate (asking for a client certificate per clientAuth) and SASL with alice
// as a PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 user.
func securedKfake(t *testing.T, pki *testutil.PKI, clientAuth tls.ClientAuthType) string {
	t.Helper()
	_, addr := newCluster(t, kfake.TLS(pki.ServerTLS(clientAuth)), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "alice", "alice-secret"), kfake.Superuser("SCRAM-SHA-256", "alice", "alice-secret"),
		kfake.Superuser("SCRAM-SHA-512", "alice", "alice-secret"))
	return addr
}

// TestSecuredCommands runs topic create, produce and consume over SASL_SSL with each
// mechanism, given by -X and by --command-config, against a broker that accepts
// nothing else; and shows the client-side failures of an untrusted broker
// certificate.
func TestSecuredCommands(t *testing.T) {
	pki := testutil.NewPKI(t)
	addr := securedKfake(t, pki, tls.NoClientCert)
	roundTrip := func(t *testing.T, topic string, sec ...string) {
		t.Helper()
		with := func(args ...string) []string { return append(append(args, "-b", addr), sec...) }
		mustRun(t, "", with("topic", "create", topic, "-p", "1")...)
		mustRun(t, "a\nb\nc\n", with("produce", topic)...)
		r := mustRun(t, "", with("consume", topic, "--from-beginning", "-n", "3", "--format", `%s@%o `)...)
		if r.stdout != "a@0 b@1 c@2 " {
			t.Fatalf("consume printed %q, want %q", r.stdout, "a@0 b@1 c@2 ")
		}
		if r := mustRun(t, "", with("topic", "list")...); !strings.Contains(r.stdout, topic) {
			t.Fatalf("topic list does not show %s: %q", topic, r.stdout)
		}
	}
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			roundTrip(t, "t-"+strings.ToLower(mech), "-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanism="+mech,
				"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-X", "ssl.ca.location="+pki.CAFile)
		})
	}
	t.Run("CommandConfig", func(t *testing.T) {
		// The file's password is wrong: -X's, which wins, is right.
		file := writeFile(t, t.TempDir(), "client.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
			"sasl.username=alice\nsasl.password=wrong\nssl.ca.location="+pki.CAFile+"\n")
		roundTrip(t, "t-file", "--command-config", file, "-X", "sasl.password=alice-secret")
	})
	t.Run("NoVerification", func(t *testing.T) {
		roundTrip(t, "t-noverify", "-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=alice",
			"-X", "sasl.password=alice-secret", "-X", "enable.ssl.certificate.verification=false")
	})
	// A wrong password is not among them: kfake closes the connection instead of
	// answering SaslAuthenticate's error, so the client sees EOF. The interop tests
	// (internal/interop/security_*_test.go) check it against a Runnel node.
	for _, tt := range []struct {
		name string
		sec  []string
		want string
	}{
		{"UntrustedCA", []string{"-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=alice",
			"-X", "sasl.password=alice-secret", "-X", "ssl.ca.location=" + pki.OtherCA}, "x509: certificate signed by unknown authority"},
		{"SystemRoots", []string{"-X", "security.protocol=ssl"}, "x509: certificate signed by unknown authority"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"topic", "list", "-b", addr}, tt.sec...)
			r := run(t, "", args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("runnel %s: exit %d, stderr %q; want exit 1 and one line with %q", strings.Join(args, " "), r.code, r.stderr, tt.want)
			}
		})
	}
}

// TestMutualTLS: against a broker that requires a client certificate signed by the
// test CA, the commands work with ssl.certificate.location and ssl.key.location, and
// fail without them.
func TestMutualTLS(t *testing.T) {
	pki := testutil.NewPKI(t)
	_, addr := newCluster(t, kfake.TLS(pki.ServerTLS(tls.RequireAndVerifyClientCert)))
	base := []string{"-b", addr, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + pki.CAFile}
	mtls := append(base[:len(base):len(base)], "-X", "ssl.certificate.location="+pki.ClientCert, "-X", "ssl.key.location="+pki.ClientKey)
	mustRun(t, "", append([]string{"topic", "create", "m", "-p", "1"}, mtls...)...)
	mustRun(t, "x\ny\n", append([]string{"produce", "m"}, mtls...)...)
	if r := mustRun(t, "", append([]string{"consume", "m", "--from-beginning", "-n", "2", "--format", `%s `}, mtls...)...); r.stdout != "x y " {
		t.Fatalf("consume printed %q, want %q", r.stdout, "x y ")
	}
	r := run(t, "", append([]string{"topic", "list"}, base...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "certificate required") {
		t.Fatalf("topic list without a client certificate: exit %d, stderr %q; want exit 1 and a TLS certificate error", r.code, r.stderr)
	}
}
