package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// Against a real node with ACLs on: acl create (each resource kind, prefixed, a host),
// list (text, JSON, filtered), delete, their effect on a client, and the errors a
// user sees.
func TestACLCommands(t *testing.T) {
	b := clustertest.StartOne(t, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=true")
	mustRun(t, "", "topic", "create", "-b", b, "orders")
	r := mustRun(t, "", "acl", "create", "-b", b, "--principal", "User:alice", "--allow", "--operation", "read", "--topic", "orders")
	if want := "created User:alice ALLOW READ from host * on TOPIC LITERAL orders\n"; r.stdout != want {
		t.Errorf("create output %q, want %q", r.stdout, want)
	}
	mustRun(t, "", "acl", "create", "-b", b, "--principal", "User:ingest", "--allow", "--operation", "WRITE", "--topic", "logs-", "--prefixed")
	mustRun(t, "", "acl", "create", "-b", b, "--principal", "User:*", "--deny", "--operation", "ALL", "--group", "billing", "--host", "10.0.0.7")
	mustRun(t, "", "acl", "create", "-b", b, "--principal", "User:ANONYMOUS", "--allow", "--operation", "ALTER", "--cluster")
	mustRun(t, "", "acl", "create", "-b", b, "--principal", "User:app", "--allow", "--operation", "describe", "--transactional-id", "tx-1")

	r = mustRun(t, "", "acl", "list", "-b", b)
	want := "RESOURCE          PATTERN   NAME           PRINCIPAL       HOST      OPERATION  PERMISSION\n" +
		"CLUSTER           LITERAL   kafka-cluster  User:ANONYMOUS  *         ALTER      ALLOW\n" +
		"GROUP             LITERAL   billing        User:*          10.0.0.7  ALL        DENY\n" +
		"TOPIC             LITERAL   orders         User:alice      *         READ       ALLOW\n" +
		"TOPIC             PREFIXED  logs-          User:ingest     *         WRITE      ALLOW\n" +
		"TRANSACTIONAL_ID  LITERAL   tx-1           User:app        *         DESCRIBE   ALLOW\n"
	if r.stdout != want {
		t.Errorf("list:\n%s\nwant:\n%s", r.stdout, want)
	}
	var rows []aclRow
	r = mustRun(t, "", "acl", "list", "-b", b, "--principal", "User:alice", "--output", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0].ResourceName != "orders" || rows[0].Operation != "READ" {
		t.Errorf("list --principal User:alice --output json = %s (%v)", r.stdout, err)
	}
	r = mustRun(t, "", "acl", "list", "-b", b, "--topic", "logs-", "--prefixed")
	if strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, "User:ingest") {
		t.Errorf("list --topic logs- --prefixed:\n%s", r.stdout)
	}

	// alice may read orders, so ANONYMOUS may not: the topic has an ACL now.
	r = run(t, "", "consume", "-b", b, "orders", "--partition", "0", "--offset", "earliest", "-n", "1")
	if r.code != 1 || !strings.Contains(r.stderr, "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("consume orders as ANONYMOUS: exit %d, stderr %q; want TOPIC_AUTHORIZATION_FAILED", r.code, r.stderr)
	}
	r = mustRun(t, "", "acl", "delete", "-b", b, "--topic", "orders")
	if !strings.Contains(r.stdout, "User:alice") {
		t.Errorf("delete --topic orders printed %q", r.stdout)
	}
	mustRun(t, "x\n", "produce", "-b", b, "orders", "--acks", "all")
	if r = mustRun(t, "", "acl", "list", "-b", b, "--topic", "orders"); strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("orders' ACLs after the delete:\n%s", r.stdout)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"create", "--principal", "User:a", "--allow", "--operation", "READ"}, 2, "name a resource"},
		{[]string{"create", "--principal", "User:a", "--operation", "READ", "--topic", "t"}, 2, "--allow or --deny"},
		{[]string{"create", "--principal", "User:a", "--allow", "--operation", "REED", "--topic", "t"}, 2, `--operation "REED"`},
		{[]string{"create", "--principal", "alice", "--allow", "--operation", "READ", "--topic", "t"}, 2, "want User:NAME"},
		{[]string{"create", "--principal", "User:a", "--allow", "--operation", "WRITE", "--group", "g"}, 1, "supports operations"},
		{[]string{"create", "--principal", "User:a", "--allow", "--deny", "--operation", "READ", "--topic", "t"}, 2, "allow"},
		{[]string{"delete", "--principal", "User:a"}, 2, "name the resource"},
	} {
		r := run(t, "", append([]string{"acl", tc.args[0], "-b", b}, tc.args[1:]...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("acl %v: exit %d, stderr %q; want exit %d naming %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}
