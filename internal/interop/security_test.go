package interop_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The user every secured test logs in as, created by sasl.bootstrap.users.
const (
	aliceUser     = "alice"
	alicePassword = "alice-secret"
)

// securedNode is one node with three Kafka listeners: PLAINTEXT (the tests' own
// set-up and checks), SASL_SSL (every mechanism, alice's password) and SSL with
// client certificates required (mTLS).
type securedNode struct {
	pki                  *testutil.PKI
	plain, saslSSL, mtls string // the listeners' HOST:PORT
}

// startSecuredNode starts a securedNode; it stops when the test ends.
func startSecuredNode(t *testing.T) *securedNode {
	t.Helper()
	s := &securedNode{pki: testutil.NewPKI(t), plain: testutil.FreeAddr(t), saslSSL: testutil.FreeAddr(t), mtls: testutil.FreeAddr(t)}
	startNode(t, append(kafkajsSets,
		// The files first: each property is checked as it is set, and a TLS
		// listener needs its keystore.
		"ssl.keystore.location="+s.pki.Keystore,
		"ssl.truststore.location="+s.pki.CAFile,
		"listeners=PLAINTEXT://"+s.plain+",SASL_SSL://"+s.saslSSL+",SSL://"+s.mtls,
		"listener.name.ssl.ssl.client.auth=required",
		"sasl.bootstrap.users="+aliceUser+":"+alicePassword)...)
	return s
}

// tlsConfig is a client's TLS configuration that trusts the test CA, presenting the
// client certificate (CN=alice) if withCert.
func (s *securedNode) tlsConfig(t *testing.T, withCert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: s.pki.Pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(s.pki.ClientCert, s.pki.ClientKey)
		testutil.NoError(t, err, "loading the client certificate")
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// TestSecurity drives one node with a SASL_SSL and an mTLS listener with every
// client: franz-go, the runnel commands (-X, --command-config), runnel mirror
// between the secured node and a plain one, kcat, kafka-python, confluent-kafka and
// KafkaJS (security_clients_test.go). Each client uses its defaults plus only the
// security settings, produces and consumes, and sees an authentication error with a
// wrong password.
func TestSecurity(t *testing.T) {
	s := startSecuredNode(t)
	t.Run("Franz", func(t *testing.T) { t.Parallel(); testSecuredFranz(t, s) })
	t.Run("FranzMTLS", func(t *testing.T) { t.Parallel(); testSecuredFranzMTLS(t, s) })
	t.Run("RunnelCLI", func(t *testing.T) { t.Parallel(); testSecuredRunnelCLI(t, s) })
	t.Run("Mirror", func(t *testing.T) { t.Parallel(); testSecuredMirror(t, s) })
	t.Run("Kcat", func(t *testing.T) { t.Parallel(); testSecuredKcat(t, s) })
	t.Run("Python", func(t *testing.T) { t.Parallel(); testSecuredPython(t, s) })
	t.Run("KafkaJS", func(t *testing.T) { t.Parallel(); testSecuredKafkaJS(t, s) })
}

// franzMechanisms are franz-go's client sides of the node's mechanisms for a password.
func franzMechanisms(password string) map[string]sasl.Mechanism {
	return map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: aliceUser, Pass: password}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: aliceUser, Pass: password}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: aliceUser, Pass: password}.AsSha512Mechanism(),
	}
}

// testSecuredFranz: with each mechanism, a franz-go client on the SASL_SSL listener
// creates a topic, produces and consumes; with a wrong password every request fails
// with SASL_AUTHENTICATION_FAILED.
func testSecuredFranz(t *testing.T, s *securedNode) {
	for mech, m := range franzMechanisms(alicePassword) {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			opts := []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, false)), kgo.SASL(m)}
			roundTripFranz(t, s.saslSSL, topicName(t), opts...)
		})
	}
	for mech, m := range franzMechanisms("wrong") {
		t.Run("WrongPassword/"+mech, func(t *testing.T) {
			t.Parallel()
			cl := newClient(t, s.saslSSL, kgo.DialTLSConfig(s.tlsConfig(t, false)), kgo.SASL(m))
			_, err := newAdminOf(cl).ListTopics(ctxT(t))
			testutil.ErrorIs(t, err, kerr.SaslAuthenticationFailed, "ListTopics as alice with a wrong password (%s)", mech)
		})
	}
}

// testSecuredFranzMTLS: a franz-go client with the client certificate produces and
// consumes on the mTLS listener; one without is refused in the TLS handshake.
func testSecuredFranzMTLS(t *testing.T, s *securedNode) {
	roundTripFranz(t, s.mtls, topicName(t), kgo.DialTLSConfig(s.tlsConfig(t, true)))
	cl := newClient(t, s.mtls, kgo.DialTLSConfig(s.tlsConfig(t, false)))
	_, err := newAdminOf(cl).ListTopics(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("ListTopics on the mTLS listener without a client certificate: %v; want TLS's certificate required alert", err)
	}
}

// roundTripFranz creates topic (one partition) through addr with opts, produces 5
// records and reads exactly them back through the same listener.
func roundTripFranz(t *testing.T, addr, topic string, opts ...kgo.Opt) {
	t.Helper()
	cl := newClient(t, addr, opts...)
	createTopic(t, newAdminOf(cl), topic, 1)
	produceValues(t, cl, topic, 0, "a", "b", "c", "d", "e")
	got := consumePartitions(t, addr, topic, map[int32]int{0: 5}, opts...)[0]
	var values []string
	for _, r := range got {
		values = append(values, string(r.Value))
	}
	testutil.Equal(t, values, []string{"a", "b", "c", "d", "e"}, "values read back from %s", topic)
	checkContiguous(t, map[int32][]*kgo.Record{0: got}, 0)
}

// runnelResult is one run of the runnel binary as a client command.
type runnelResult struct {
	code           int
	stdout, stderr string
}

// runRunnel runs the runnel binary with args and stdin under testTimeout.
func runRunnel(t *testing.T, stdin string, args ...string) runnelResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, runnelBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return runnelResult{0, stdout.String(), stderr.String()}
	case errors.As(err, &exit) && ctx.Err() == nil:
		return runnelResult{exit.ExitCode(), stdout.String(), stderr.String()}
	}
	t.Fatalf("runnel %s: %v (context: %v)\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), stderr.String())
	return runnelResult{}
}

// mustRunnel is runRunnel that fails the test unless the command exits 0.
func mustRunnel(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := runRunnel(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("runnel %s: exit %d\nstderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// saslX are the -X properties of a runnel command (or kcat) on the SASL_SSL listener
// as alice with password.
func (s *securedNode) saslX(flag, mechanism, password string) []string {
	return []string{flag, "security.protocol=SASL_SSL", flag, "sasl.mechanism=" + mechanism,
		flag, "sasl.username=" + aliceUser, flag, "sasl.password=" + password, flag, "ssl.ca.location=" + s.pki.CAFile}
}

// testSecuredRunnelCLI: the runnel binary's topic create, produce, consume, topic
// list and group describe work on the SASL_SSL listener with -X and with
// --command-config, and on the mTLS listener with the client certificate; a wrong
// password exits 1 with the broker's SASL_AUTHENTICATION_FAILED.
func testSecuredRunnelCLI(t *testing.T, s *securedNode) {
	topic := topicName(t)
	sec := append([]string{"-b", s.saslSSL}, s.saslX("-X", "SCRAM-SHA-512", alicePassword)...)
	with := func(args ...string) []string { return append(args, sec...) }
	mustRunnel(t, "", with("topic", "create", topic, "-p", "1")...)
	mustRunnel(t, "one\ntwo\nthree\n", with("produce", topic)...)
	out := mustRunnel(t, "", with("consume", topic, "--group", "g-"+topic, "--from-beginning", "-n", "3", "--format", `%s@%o `)...)
	testutil.Equal(t, out, "one@0 two@1 three@2 ", "runnel consume -X output")
	out = mustRunnel(t, "", with("topic", "list")...)
	testutil.True(t, strings.Contains(out, topic), "runnel topic list -X does not list %s: %q", topic, out)
	out = mustRunnel(t, "", with("group", "describe", "g-"+topic)...)
	testutil.True(t, strings.Contains(out, topic), "runnel group describe -X does not show %s: %q", topic, out)

	// A properties file, as Kafka's tools take; -X's password wins over the file's.
	file := filepath.Join(t.TempDir(), "client.properties")
	testutil.NoError(t, os.WriteFile(file, []byte("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"+
		"sasl.username=alice\nsasl.password=wrong\nssl.ca.location="+s.pki.CAFile+"\n"), 0o600), "writing %s", file)
	out = mustRunnel(t, "", "consume", topic, "-b", s.saslSSL, "--command-config", file, "-X", "sasl.password="+alicePassword,
		"--partition", "0", "--offset", "1", "-n", "2", "--format", `%s `)
	testutil.Equal(t, out, "two three ", "runnel consume --command-config output")
	r := runRunnel(t, "", "topic", "list", "-b", s.saslSSL, "--command-config", file)
	if r.code != 1 || !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("runnel topic list with the file's wrong password: exit %d, stderr %q; want exit 1 and one line naming SASL_AUTHENTICATION_FAILED", r.code, r.stderr)
	}

	mtls := []string{"-b", s.mtls, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + s.pki.CAFile,
		"-X", "ssl.certificate.location=" + s.pki.ClientCert, "-X", "ssl.key.location=" + s.pki.ClientKey}
	out = mustRunnel(t, "", append([]string{"consume", topic, "--partition", "0", "--offset", "earliest", "-n", "3", "--format", `%s `}, mtls...)...)
	testutil.Equal(t, out, "one two three ", "runnel consume over mTLS output")
}

// testSecuredMirror: runnel mirror run copies a topic from the secured node's
// SASL_SSL listener (--source-X) to a plain node (--target-X
// security.protocol=plaintext), every record at its offset; runnel mirror status
// reads the target with a --target-command-config file.
func testSecuredMirror(t *testing.T, s *securedNode) {
	target := bootstrap(startNode(t, kafkajsSets...))
	topic := topicName(t)
	src := newClient(t, s.plain)
	createTopic(t, newAdminOf(src), topic, 1)
	var values []string
	for i := range 20 {
		values = append(values, fmt.Sprintf("m%d", i))
	}
	produceValues(t, src, topic, 0, values...)

	args := append([]string{"mirror", "run", "--name", "secured", "--source", s.saslSSL, "--target", target,
		"--topics", topic, "--naming", "identity", "--target-X", "security.protocol=plaintext"},
		s.saslX("--source-X", "SCRAM-SHA-512", alicePassword)...)
	startMirror(t, args...)

	got := consumePartitions(t, target, topic, map[int32]int{0: len(values)})[0]
	var copied []string
	for _, r := range got {
		copied = append(copied, string(r.Value))
	}
	testutil.Equal(t, copied, values, "records on the target")
	checkContiguous(t, map[int32][]*kgo.Record{0: got}, 0)

	file := filepath.Join(t.TempDir(), "target.properties")
	testutil.NoError(t, os.WriteFile(file, []byte("security.protocol=PLAINTEXT\n"), 0o600), "writing %s", file)
	status := mustRunnel(t, "", "mirror", "status", "--target", target, "--name", "secured", "--target-command-config", file)
	testutil.True(t, strings.Contains(status, topic), "runnel mirror status does not show %s: %q", topic, status)
}

// startMirror runs the runnel binary with args (a runnel mirror run command line)
// until the test ends, then stops it with SIGTERM and fails the test unless it
// exits 0 within 15 s; its output is logged if the test failed.
func startMirror(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(runnelBin, args...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	testutil.NoError(t, cmd.Start(), "starting runnel mirror run")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("runnel mirror run after SIGTERM: %v", err)
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("runnel mirror run did not stop within 15 s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("runnel mirror run output:\n%s", out.String())
		}
	})
}

// newAdminOf is a kadm client over cl (closed with cl).
func newAdminOf(cl *kgo.Client) *kadm.Client { return kadm.NewClient(cl) }
