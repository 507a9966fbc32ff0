package cli

import (
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The issue-31 denials through the CLI against a real node with ACLs on: User:alice
// (SCRAM, on a SASL_PLAINTEXT listener) holds only READ on topic orders. Before, the
// producer said CLUSTER_AUTHORIZATION_FAILED (the idempotent InitProducerId, KIP-679),
// the group consumer `consume topic "" partition 0: ... GROUP_AUTHORIZATION_FAILED`,
// and the consumer of a topic she may not read named no principal or operation. Each
// must name the principal, the host, the operation and the resource, and say how to
// grant it.
func TestDenialsNameTheACL(t *testing.T) {
	plain, sasl := testutil.FreeAddr(t), testutil.FreeAddr(t)
	clustertest.StartOne(t,
		"listeners=PLAINTEXT://"+plain+",SASL_PLAINTEXT://"+sasl,
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.bootstrap.users=alice:alice-pw",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		// The test's own set-up connects on the PLAINTEXT listener, as ANONYMOUS.
		"super.users=User:ANONYMOUS")
	mustRun(t, "", "topic", "create", "orders", "-b", plain)
	mustRun(t, "", "topic", "create", "secret", "-b", plain)
	mustRun(t, "", "acl", "create", "-b", plain, "--principal", "User:alice", "--allow", "--operation", "READ", "--topic", "orders")
	alice := []string{"-b", sasl, "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=SCRAM-SHA-512",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-pw"}
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
		want  string // the whole message after "runnel: "
	}{
		{"idempotent producer", "hello\n", []string{"produce", "orders"},
			"User:alice (host 127.0.0.1) is not authorized to WRITE topic orders (CLUSTER_AUTHORIZATION_FAILED from InitProducerId: " +
				"an idempotent producer needs WRITE on a topic or IDEMPOTENT_WRITE on the cluster): " +
				"grant it with runnel acl create --principal User:alice --allow --operation WRITE --topic orders"},
		{"group consumer", "", []string{"consume", "orders", "--group", "g1", "-n", "1"},
			"User:alice (host 127.0.0.1) is not authorized to READ group g1 (GROUP_AUTHORIZATION_FAILED): " +
				"grant it with runnel acl create --principal User:alice --allow --operation READ --group g1"},
		{"topic not readable", "", []string{"consume", "secret", "-n", "1"},
			"User:alice (host 127.0.0.1) is not authorized to READ topic secret (TOPIC_AUTHORIZATION_FAILED): " +
				"grant it with runnel acl create --principal User:alice --allow --operation READ --topic secret"},
		// The node's own message (DescribeGroups carries one) names what it refused.
		{"describe a group", "", []string{"group", "describe", "g1"},
			"User:alice (host 127.0.0.1) is not authorized to DESCRIBE group g1 (GROUP_AUTHORIZATION_FAILED): " +
				"grant it with runnel acl create --principal User:alice --allow --operation DESCRIBE --group g1"},
		{"cluster", "", []string{"acl", "list"},
			"User:alice (host 127.0.0.1) is not authorized to DESCRIBE the cluster (CLUSTER_AUTHORIZATION_FAILED): " +
				"grant it with runnel acl create --principal User:alice --allow --operation DESCRIBE --cluster"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.stdin, append(tt.args, alice...)...)
			if got := strings.TrimSuffix(r.stderr, "\n"); r.code != 1 || got != "runnel: "+tt.want {
				t.Errorf("runnel %s: exit %d, stderr\n%s\nwant exit 1 and\nrunnel: %s", strings.Join(tt.args, " "), r.code, r.stderr, tt.want)
			}
		})
	}
	// Once granted as the message says, the producer works.
	mustRun(t, "", "acl", "create", "-b", plain, "--principal", "User:alice", "--allow", "--operation", "WRITE", "--topic", "orders")
	mustRun(t, "hello\n", append([]string{"produce", "orders"}, alice...)...)
}

// A denial names the principal the node derives: the client certificate's subject
// over TLS, User:ANONYMOUS without authentication; without a resource it can name,
// it does not make one up.
func TestDenialPrincipal(t *testing.T) {
	pki := testutil.NewPKI(t)
	c := &connFlags{security: &securityFlags{propFlag: "-X", props: []string{"security.protocol=ssl",
		"ssl.certificate.location=" + pki.ClientCert, "ssl.key.location=" + pki.ClientKey}}}
	if got := c.principal(); got != "User:CN=alice" {
		t.Errorf("mTLS principal %q, want User:CN=alice", got)
	}
	if got := (&connFlags{}).principal(); got != "User:ANONYMOUS" {
		t.Errorf("plaintext principal %q, want User:ANONYMOUS", got)
	}
}
