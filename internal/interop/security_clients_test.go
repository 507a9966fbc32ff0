package interop_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/testutil"
)

// The secured scenarios of the other clients, on TestSecurity's node
// (security_test.go).

// kcatSASL are kcat's -X properties for the SASL_SSL listener, with librdkafka's own
// name for the mechanism (sasl.mechanisms).
func (s *securedNode) kcatSASL(mechanism, password string) []string {
	return []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mechanism,
		"-X", "sasl.username=" + aliceUser, "-X", "sasl.password=" + password, "-X", "ssl.ca.location=" + s.pki.CAFile}
}

// testSecuredKcat: kcat produces and consumes on the SASL_SSL listener with
// SCRAM-SHA-512 and on the mTLS listener with the client certificate; a wrong
// password fails with librdkafka's SASL authentication error, and a client without
// a certificate with TLS's certificate required alert.
func testSecuredKcat(t *testing.T, s *securedNode) {
	if _, err := exec.LookPath("kcat"); err != nil {
		testutil.Missing(t, "kcat is not on PATH (scripts/install-deps.sh installs it)")
	}
	topic := topicName(t)
	createTopic(t, newAdmin(t, s.plain), topic, 1)
	sasl := s.kcatSASL("SCRAM-SHA-512", alicePassword)
	kcat(t, s.saslSSL, "k0:v0\nk1:v1\nk2:v2\n", append([]string{"-P", "-t", topic, "-K", ":"}, sasl...)...)
	got := kcat(t, s.saslSSL, "", append([]string{"-C", "-t", topic, "-o", "beginning", "-e", "-f", `%o %k %s\n`}, sasl...)...)
	testutil.Equal(t, got, "0 k0 v0\n1 k1 v1\n2 k2 v2\n", "kcat -C over SASL_SSL")

	mtls := []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + s.pki.CAFile,
		"-X", "ssl.certificate.location=" + s.pki.ClientCert, "-X", "ssl.key.location=" + s.pki.ClientKey}
	kcat(t, s.mtls, "k3:v3\n", append([]string{"-P", "-t", topic, "-K", ":"}, mtls...)...)
	got = kcat(t, s.mtls, "", append([]string{"-C", "-t", topic, "-o", "2", "-e", "-f", `%o %k %s\n`}, mtls...)...)
	testutil.Equal(t, got, "2 k2 v2\n3 k3 v3\n", "kcat -C over mTLS")

	for _, tt := range []struct {
		name, addr string
		args       []string
		want       string
	}{
		// librdkafka's prefix, then the broker's SaslAuthenticate error message.
		{"WrongPassword", s.saslSSL, s.kcatSASL("SCRAM-SHA-512", "wrong"), `SASL authentication error: authentication failed: SCRAM-SHA-512 user "alice": invalid credentials`},
		{"NoClientCertificate", s.mtls, mtls[:4], "certificate required"},
	} {
		stderr, err := kcatFails(t, tt.addr, append([]string{"-L", "-t", topic}, tt.args...)...)
		if err == nil || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: kcat -L: %v, stderr:\n%s\nwant a failure with %q", tt.name, err, stderr, tt.want)
		}
	}
}

// kcatFails runs kcat with args against addr, for a command expected to fail, and
// returns its stderr and its error (nil if it exited 0).
func kcatFails(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// -m 2: kcat gives up on metadata after 2 s; librdkafka logs each failed
	// connection attempt in between (the first within milliseconds).
	cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr, "-m", "2"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %s: %v after the timeout\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stderr.String(), err
}

// securedScriptEnv is the environment of the secured scripts (py/secured_env.py,
// js/secured.js).
func (s *securedNode) securedScriptEnv(mechanism, password, expect string) []string {
	return []string{"RUNNEL_INTEROP_SASL_MECHANISM=" + mechanism, "RUNNEL_INTEROP_SASL_USERNAME=" + aliceUser,
		"RUNNEL_INTEROP_SASL_PASSWORD=" + password, "RUNNEL_INTEROP_SSL_CAFILE=" + s.pki.CAFile,
		"RUNNEL_INTEROP_EXPECT=" + expect}
}

// secureScenarios are the runs of one client's secured script: mechanism, password,
// what the script must see.
type securedScenario struct{ name, mechanism, password, expect string }

// testSecuredPython runs py/secured_kafka_python.py and py/secured_confluent.py on
// the SASL_SSL listener. kafka-python 2.0.2 has PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512; it runs with SCRAM-SHA-512 and PLAIN (the raw SASL frames of its
// SaslHandshake v0 login differ per mechanism), confluent-kafka with SCRAM-SHA-512.
func testSecuredPython(t *testing.T, s *securedNode) {
	python := pythonInterpreter(t)
	dir, err := filepath.Abs("py")
	testutil.NoError(t, err, "locating internal/interop/py")
	for script, scenarios := range map[string][]securedScenario{
		"secured_kafka_python": {{"SCRAM-SHA-512", "SCRAM-SHA-512", alicePassword, "ok"}, {"PLAIN", "PLAIN", alicePassword, "ok"},
			{"WrongPassword", "SCRAM-SHA-512", "wrong", "auth-failure"}},
		"secured_confluent": {{"SCRAM-SHA-512", "SCRAM-SHA-512", alicePassword, "ok"},
			{"WrongPassword", "SCRAM-SHA-512", "wrong", "auth-failure"}},
	} {
		for _, sc := range scenarios {
			t.Run(script+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				topic := topicName(t)
				createTopic(t, newAdmin(t, s.plain), topic, 1)
				env := append(s.securedScriptEnv(sc.mechanism, sc.password, sc.expect), "PYTHONDONTWRITEBYTECODE=1")
				runScript(t, pythonTimeout, dir, env, python, filepath.Join(dir, script+".py"), s.saslSSL, topic)
			})
		}
	}
}

// testSecuredKafkaJS runs js/secured.js on the SASL_SSL listener with SCRAM-SHA-512,
// and with a wrong password.
func testSecuredKafkaJS(t *testing.T, s *securedNode) {
	dir := kafkajsDir(t)
	for _, sc := range []securedScenario{{"SCRAM-SHA-512", "SCRAM-SHA-512", alicePassword, "ok"},
		{"WrongPassword", "SCRAM-SHA-512", "wrong", "auth-failure"}} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			env := append(s.securedScriptEnv(sc.mechanism, sc.password, sc.expect), "KAFKAJS_NO_PARTITIONER_WARNING=1")
			runScript(t, kafkajsTimeout, dir, env, "node", filepath.Join(dir, "secured.js"), s.saslSSL, topicName(t))
		})
	}
}
