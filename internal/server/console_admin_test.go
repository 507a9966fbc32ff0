package server_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/internal/console"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The console's topic sizes, node configs, ACL, user and quota pages against a real
// node: each read as the Kafka request answers it, each change through the Kafka
// request and seen by a Kafka client.
func TestConsoleAdminPages(t *testing.T) {
	tn, _ := startOwn(t, ownConfig(t, 1, "log.retention.hours=100", "authorizer.class.name=StandardAuthorizer",
		"allow.everyone.if.no.acl.found=true"))
	seedConsoleData(t, tn, 1)
	cc := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminOf(t, tn)
	v := "2000"
	_, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: &v}}, 1)
	testutil.NoError(t, err, "set node 1's log.retention.ms")

	// The topic list: records are the offsets summed, the size the leader's log.
	var ts httpd.Topics
	cc.getJSON("/api/v1/topics", &ts)
	i := slices.IndexFunc(ts.Topics, func(s httpd.TopicSummary) bool { return s.Name == "orders" })
	testutil.True(t, i >= 0, "no topic orders in %+v", ts.Topics)
	orders := ts.Topics[i]
	testutil.True(t, orders.Records != nil && *orders.Records == 15, "orders' records %v, want 15 (10+5+0); %s", orders.Records, ts.SizesError)
	testutil.True(t, orders.SizeBytes != nil && *orders.SizeBytes > 15 && orders.SizeOnDiskBytes != nil && *orders.SizeOnDiskBytes == *orders.SizeBytes,
		"orders' size %v, on disk %v: want more than 15 bytes, the same with one replica", orders.SizeBytes, orders.SizeOnDiskBytes)

	// One topic id format: the CLI's (Kafka's URL-safe base64).
	listed, err := adm.ListTopics(ctx, "orders")
	testutil.NoError(t, err, "list orders")
	var topic httpd.Topic
	cc.getJSON("/api/v1/topics/orders", &topic)
	id := listed["orders"].ID
	if want := base64.RawURLEncoding.EncodeToString(id[:]); topic.ID != want {
		t.Errorf("topic id %q, want %q as the CLI prints it", topic.ID, want)
	}

	// The node's configs with their sources.
	var nc console.NodeConfigs
	cc.getJSON("/api/v1/nodes/1", &nc)
	src := map[string]string{}
	val := map[string]string{}
	for _, c := range nc.Configs {
		src[c.Name] = c.Source
		if c.Value != nil {
			val[c.Name] = *c.Value
		}
	}
	for name, want := range map[string]string{"log.retention.hours": "static", "log.retention.ms": "dynamic", "num.partitions": "default"} {
		if src[name] != want {
			t.Errorf("node 1's %s has source %q (value %q), want %s", name, src[name], val[name], want)
		}
	}
	if code, _, body := cc.get("/nodes/1"); code != http.StatusOK || !strings.Contains(body, "log.retention.hours") || !strings.Contains(body, `data-chart-kind="node"`) {
		t.Errorf("GET /nodes/1: %d, want the configs and the charts:\n%.2000s", code, body)
	}
	if code, _, _ := cc.get("/api/v1/nodes/7"); code != http.StatusNotFound {
		t.Errorf("GET /api/v1/nodes/7 (no such node): %d, want 404", code)
	}

	token := cc.csrf()
	// ACLs: created and deleted by CreateAcls and DeleteAcls, seen by DescribeAcls.
	acl := console.ACL{Principal: "User:bob", Host: "*", ResourceType: "topic", ResourceName: "orders", PatternType: "literal", Operation: "read", Permission: "allow"}
	var aa console.ACLAction
	cc.sendOK(http.MethodPost, "/api/v1/acls", token, acl, &aa)
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:bob").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	testutil.NoError(t, err, "describe bob's ACLs")
	testutil.True(t, len(described) == 1 && len(described[0].Described) == 1, "after POST /api/v1/acls, DescribeAcls finds %+v", described)
	var acls console.ACLs
	cc.getJSON("/api/v1/acls", &acls)
	testutil.True(t, slices.Contains(acls.ACLs, acl), "GET /api/v1/acls = %+v, want %+v in it", acls.ACLs, acl)
	if code, _, body := cc.get("/acls"); code != http.StatusOK || !strings.Contains(body, "User:bob") {
		t.Errorf("GET /acls: %d, want bob's ACL:\n%.2000s", code, body)
	}
	cc.sendOK(http.MethodDelete, "/api/v1/acls", token, acl, &aa)
	testutil.True(t, aa.Deleted == 1, "DELETE /api/v1/acls deleted %d, want 1", aa.Deleted)
	if code, body := cc.send(http.MethodPost, "/api/v1/acls", token, console.ACL{Principal: "bob", ResourceType: "topic", ResourceName: "x", Operation: "read"}); code != http.StatusBadRequest || !strings.Contains(body, "principal") {
		t.Errorf("an ACL whose principal is not TYPE:NAME: %d %s, want 400 naming the principal", code, body)
	}

	// Users: the mechanism and iterations, never a secret, as
	// DescribeUserScramCredentials answers them.
	var ua console.UserAction
	cc.sendOK(http.MethodPost, "/api/v1/users", token, console.UserRequest{User: "bob", Mechanism: "SCRAM-SHA-256", Password: "bob-secret-pw", Iterations: 4096}, &ua)
	scrams, err := adm.DescribeUserSCRAMs(ctx, "bob")
	testutil.NoError(t, err, "describe bob")
	testutil.True(t, len(scrams["bob"].CredInfos) == 1 && scrams["bob"].CredInfos[0].Mechanism == kadm.ScramSha256 && scrams["bob"].CredInfos[0].Iterations == 4096,
		"after POST /api/v1/users, bob is %+v", scrams["bob"])
	code, _, body := cc.get("/api/v1/users")
	testutil.True(t, code == http.StatusOK && strings.Contains(body, `"SCRAM-SHA-256"`) && !strings.Contains(body, "bob-secret-pw") && !strings.Contains(body, "salt"),
		"GET /api/v1/users: %d %s", code, body)
	if code, _, body := cc.get("/users"); code != http.StatusOK || !strings.Contains(body, "bob") {
		t.Errorf("GET /users: %d:\n%.2000s", code, body)
	}
	cc.sendOK(http.MethodDelete, "/api/v1/users/bob", token, nil, &ua)
	scrams, err = adm.DescribeUserSCRAMs(ctx)
	testutil.NoError(t, err, "describe the users")
	testutil.True(t, len(scrams["bob"].CredInfos) == 0, "after DELETE /api/v1/users/bob, bob is %+v", scrams["bob"])

	// Quotas: set and removed by AlterClientQuotas.
	bob := "bob"
	quota := console.QuotaRequest{Entity: map[string]*string{"user": &bob}, Key: "producer_byte_rate", Value: 1024}
	var qa console.QuotaAction
	cc.sendOK(http.MethodPost, "/api/v1/quotas", token, quota, &qa)
	qs, err := adm.DescribeClientQuotas(ctx, false, nil)
	testutil.NoError(t, err, "describe the quotas")
	testutil.True(t, len(qs) == 1 && len(qs[0].Values) == 1 && qs[0].Values[0].Value == 1024, "after POST /api/v1/quotas the quotas are %+v", qs)
	if code, _, body := cc.get("/quotas"); code != http.StatusOK || !strings.Contains(body, "user=bob") || !strings.Contains(body, "producer_byte_rate") {
		t.Errorf("GET /quotas: %d:\n%.2000s", code, body)
	}
	cc.sendOK(http.MethodDelete, "/api/v1/quotas", token, quota, &qa)
	qs, err = adm.DescribeClientQuotas(ctx, false, nil)
	testutil.NoError(t, err, "describe the quotas")
	testutil.True(t, len(qs) == 0, "after DELETE /api/v1/quotas the quotas are %+v", qs)

	// Without the CSRF token nothing changes.
	if code, _ := cc.send(http.MethodPost, "/api/v1/acls", "", acl); code != http.StatusForbidden {
		t.Errorf("POST /api/v1/acls without the CSRF token: %d, want 403", code)
	}
}

// On a secured node, each page and change needs the ACL of its Kafka request, and a
// refusal names it.
func TestConsoleAdminPagesNeedTheirACL(t *testing.T) {
	tn := securedConsoleNode(t)
	base := "http://" + tn.server().HTTPAddr().String()
	alice := newConsoleClient(t, base, nil)
	if code, _, body := alice.login("alice", "alice-pw"); code != http.StatusOK {
		t.Fatalf("login as alice: %d %s", code, body)
	}
	token := alice.csrf()
	alice.checkDenied("alice", token, []denial{
		{http.MethodGet, "/acls", nil, "user alice (host 127.0.0.1) lacks DESCRIBE on the cluster"},
		{http.MethodGet, "/api/v1/acls", nil, "user alice (host 127.0.0.1) lacks DESCRIBE on the cluster"},
		{http.MethodGet, "/users", nil, "user alice (host 127.0.0.1) lacks DESCRIBE on the cluster"},
		{http.MethodGet, "/quotas", nil, "user alice (host 127.0.0.1) lacks DESCRIBE_CONFIGS on the cluster"},
		{http.MethodGet, "/api/v1/nodes/1", nil, "user alice (host 127.0.0.1) lacks DESCRIBE_CONFIGS on the cluster"},
		{http.MethodGet, "/nodes/1", nil, "user alice (host 127.0.0.1) lacks DESCRIBE_CONFIGS on the cluster"},
		{http.MethodPost, "/api/v1/acls", console.ACL{Principal: "User:alice", ResourceType: "cluster", ResourceName: "kafka-cluster", Operation: "alter"},
			"lacks ALTER on the cluster"},
		{http.MethodPost, "/api/v1/quotas", console.QuotaRequest{Entity: map[string]*string{"user": nil}, Key: "producer_byte_rate", Value: 1},
			"lacks ALTER_CONFIGS on the cluster"},
	})
	admin := newConsoleClient(t, base, nil)
	if code, _, body := admin.login("admin", "admin-pw"); code != http.StatusOK {
		t.Fatalf("login as admin: %d %s", code, body)
	}
	var users console.Users
	admin.getJSON("/api/v1/users", &users)
	names := []string{}
	for _, u := range users.Users {
		names = append(names, u.User)
	}
	testutil.True(t, slices.Equal(names, []string{"admin", "alice"}), "the admin sees users %v, want admin and alice", names)
	var acls console.ACLs
	admin.getJSON("/api/v1/acls", &acls)
	testutil.True(t, len(acls.ACLs) == 2, "the admin sees ACLs %+v, want alice's two", acls.ACLs)
}
