package kafka_test

// ACLs end to end: a real node with authorizer.class.name set, franz-go clients over
// real sockets, as User:ANONYMOUS (no authentication on the listener).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/recordbatch"
)

const (
	anonymous        = "User:ANONYMOUS"
	standardAuthz    = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	allowIfNoACL     = "allow.everyone.if.no.acl.found=true"
	testACLTimeout   = 20 * time.Second
	clusterResource  = "kafka-cluster"
	literal, prefix  = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	allowed, refused = kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
)

type aclSpec struct {
	rt        kmsg.ACLResourceType
	name      string
	pattern   kmsg.ACLResourcePatternType
	principal string
	op        kmsg.ACLOperation
	perm      kmsg.ACLPermissionType
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testACLTimeout)
	t.Cleanup(cancel)
	return ctx
}

// createACLs sends one CreateAcls and returns each creation's error.
func createACLs(t *testing.T, cl *kgo.Client, specs ...aclSpec) []error {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, s := range specs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = s.rt, s.name, s.pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = s.principal, "*", s.op, s.perm
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("CreateAcls: %v", err)
	}
	errs := make([]error, len(resp.Results))
	for i, r := range resp.Results {
		errs[i] = codeError(r.ErrorCode, r.ErrorMessage)
	}
	return errs
}

func mustCreateACLs(t *testing.T, cl *kgo.Client, specs ...aclSpec) {
	t.Helper()
	for i, err := range createACLs(t, cl, specs...) {
		if err != nil {
			t.Fatalf("CreateAcls %+v: %v", specs[i], err)
		}
	}
}

// codeError is the error of a code, with its message.
func codeError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err != nil && msg != nil {
		return &withMessage{err, *msg}
	}
	return err
}

type withMessage struct {
	err error
	msg string
}

func (e *withMessage) Error() string { return e.err.Error() + ": " + e.msg }
func (e *withMessage) Unwrap() error { return e.err }

// produceOne produces one record to topic and returns the partition's error, with
// the broker's message.
func produceOne(t *testing.T, cl *kgo.Client, topic string) error {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = oneBatch(t)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("Produce to %s: %v", topic, err)
	}
	p := resp.Topics[0].Partitions[0]
	return codeError(p.ErrorCode, p.ErrorMessage)
}

// oneBatch is a v2 record batch of one record.
func oneBatch(t *testing.T) []byte {
	b := recordbatch.NewBuilder(1)
	b.Add(nil, []byte("v"), nil, time.Now().UnixMilli())
	return []byte(b.Build())
}

// fetchError fetches partition 0 of the topic with id (kgo sends Fetch v13+, which
// names topics by id) and returns its error.
func fetchError(t *testing.T, cl *kgo.Client, topic string, id [16]byte) error {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("Fetch %s: %v", topic, err)
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

func requireCode(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

func TestACLsEnforcedOnOneNode(t *testing.T) {
	addr := clustertest.StartOne(t, standardAuthz, allowIfNoACL)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	ids := map[string][16]byte{}
	for _, topic := range []string{"secret", "pub-a", "open"} {
		created, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		ids[topic] = created.ID
	}
	if err := produceOne(t, cl, "pub-a"); err != nil {
		t.Fatalf("produce to pub-a before any ACL: %v", err)
	}
	// The cluster keeps no ACL (allow.everyone.if.no.acl.found lets ANONYMOUS
	// administer it); "secret" is alice's only; "pub-" topics are readable, not
	// writable; group "g" is ANONYMOUS's, "other" alice's.
	mustCreateACLs(t, cl,
		aclSpec{kmsg.ACLResourceTypeTopic, "secret", literal, "User:alice", kmsg.ACLOperationAll, allowed},
		aclSpec{kmsg.ACLResourceTypeTopic, "pub-", prefix, anonymous, kmsg.ACLOperationRead, allowed},
		aclSpec{kmsg.ACLResourceTypeTopic, "pub-", prefix, "User:*", kmsg.ACLOperationWrite, refused},
		aclSpec{kmsg.ACLResourceTypeGroup, "g", literal, anonymous, kmsg.ACLOperationRead, allowed},
		aclSpec{kmsg.ACLResourceTypeGroup, "other", literal, "User:alice", kmsg.ACLOperationRead, allowed},
		aclSpec{kmsg.ACLResourceTypeTransactionalId, "tx-alice", literal, "User:alice", kmsg.ACLOperationAll, allowed},
	)

	err := produceOne(t, cl, "secret")
	requireCode(t, "produce to secret", err, kerr.TopicAuthorizationFailed)
	for _, want := range []string{anonymous, "WRITE", "Topic:secret"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the denial %q does not name %s", err, want)
		}
	}
	requireCode(t, "produce to pub-a (DENY WRITE for User:*)", produceOne(t, cl, "pub-a"), kerr.TopicAuthorizationFailed)
	if err := produceOne(t, cl, "open"); err != nil {
		t.Fatalf("produce to open (no ACL): %v", err)
	}
	requireCode(t, "fetch secret", fetchError(t, cl, "secret", ids["secret"]), kerr.TopicAuthorizationFailed)
	if err := fetchError(t, cl, "pub-a", ids["pub-a"]); err != nil {
		t.Fatalf("fetch pub-a (READ by prefix): %v", err)
	}
	// ListOffsets needs DESCRIBE, which READ implies.
	if offs, err := adm.ListEndOffsets(ctx, "pub-a"); err != nil || offs["pub-a"][0].Err != nil || offs["pub-a"][0].Offset != 1 {
		t.Fatalf("end offsets of pub-a: %v %v", offs, err)
	}
	listReq := kmsg.NewPtrListOffsetsRequest()
	listReq.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "secret"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	listReq.Topics = append(listReq.Topics, lt)
	// franz-go looks up the leader first: Metadata already answers
	// TOPIC_AUTHORIZATION_FAILED for a topic the principal may not describe, and
	// the client returns it; a client that asks the node anyway gets it per partition.
	listResp, err := listReq.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(listResp.Topics[0].Partitions[0].ErrorCode)
	}
	requireCode(t, "end offset of secret", err, kerr.TopicAuthorizationFailed)

	// Groups: a consumer in g reads pub-a and commits; one in "other" is refused.
	consumer := newClient(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("pub-a"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	fetches := consumer.PollRecords(ctx, 1)
	if errs := fetches.Errors(); len(errs) > 0 || fetches.NumRecords() != 1 {
		t.Fatalf("consume pub-a in group g: %v (records %d)", errs, fetches.NumRecords())
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit in g: %v", err)
	}
	joinReq := kmsg.NewPtrJoinGroupRequest()
	joinReq.Group, joinReq.ProtocolType, joinReq.SessionTimeoutMillis, joinReq.RebalanceTimeoutMillis = "other", "consumer", 10_000, 10_000
	joinReq.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	// Sent to the node itself: franz-go would look the coordinator up first, which
	// FindCoordinator refuses (checked below).
	joinResp, err := cl.SeedBrokers()[0].Request(ctx, joinReq)
	if err != nil {
		t.Fatal(err)
	}
	requireCode(t, "join group other", kerr.ErrorForCode(joinResp.(*kmsg.JoinGroupResponse).ErrorCode), kerr.GroupAuthorizationFailed)

	// FindCoordinator needs DESCRIBE on the group or transactional id, per key (v4+
	// batches keys): g and an id without ACLs are found, other and tx-alice refused.
	findReq := kmsg.NewPtrFindCoordinatorRequest()
	findReq.CoordinatorKeys = []string{"g", "other"}
	findResp, err := cl.SeedBrokers()[0].Request(ctx, findReq)
	if err != nil {
		t.Fatal(err)
	}
	found := findResp.(*kmsg.FindCoordinatorResponse).Coordinators
	if len(found) != 2 {
		t.Fatalf("FindCoordinator of g and other: %d coordinators", len(found))
	}
	requireCode(t, "find coordinator of g", kerr.ErrorForCode(found[0].ErrorCode), nil)
	requireCode(t, "find coordinator of other", kerr.ErrorForCode(found[1].ErrorCode), kerr.GroupAuthorizationFailed)
	if msg := found[1].ErrorMessage; msg == nil || !strings.Contains(*msg, "Group:other") || !strings.Contains(*msg, anonymous) {
		t.Errorf("FindCoordinator's denial of other does not name the group and principal: %v", msg)
	}
	// ConsumerGroupDescribe (KIP-848) carries a message per group: the denial's.
	cgdReq := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgdReq.Groups = []string{"other"}
	cgdResp, err := cl.SeedBrokers()[0].Request(ctx, cgdReq)
	if err != nil {
		t.Fatal(err)
	}
	if gs := cgdResp.(*kmsg.ConsumerGroupDescribeResponse).Groups; len(gs) != 1 ||
		gs[0].ErrorCode != kerr.GroupAuthorizationFailed.Code || gs[0].ErrorMessage == nil ||
		!strings.Contains(*gs[0].ErrorMessage, "DESCRIBE Group:other") || !strings.Contains(*gs[0].ErrorMessage, anonymous) {
		t.Errorf("ConsumerGroupDescribe's denial of other does not name the principal, operation and group: %+v", gs)
	}
	for _, tc := range []struct {
		id   string
		want error
	}{{"tx-open", nil}, {"tx-alice", kerr.TransactionalIDAuthorizationFailed}} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{tc.id}
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
		if tc.want == nil && c.ErrorCode == kerr.CoordinatorNotAvailable.Code {
			continue // allowed; __transaction_state is still being created
		}
		requireCode(t, "find the transaction coordinator of "+tc.id, kerr.ErrorForCode(c.ErrorCode), tc.want)
	}

	// DescribeAcls with a MATCH filter lists what applies to pub-a.
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("pub-a").ResourcePatternType(kadm.ACLPatternMatch).
		Operations(kadm.OpAny).Allow().AllowHosts().Deny().DenyHosts())
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 2 {
		t.Fatalf("describe ACLs matching pub-a: %+v %v", described, err)
	}

	// Deleting secret's ACL leaves it with none: allow.everyone.if.no.acl.found opens it.
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("secret").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpAny).Allow().AllowHosts().Deny().DenyHosts())
	if err != nil || len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 1 {
		t.Fatalf("delete secret's ACLs: %+v %v", deleted, err)
	}
	if err := produceOne(t, cl, "secret"); err != nil {
		t.Fatalf("produce to secret after its ACL was deleted: %v", err)
	}

	// CreateTopics returns a topic's configs and layout only with DESCRIBE_CONFIGS on
	// it: ANONYMOUS may create "made-" topics (CREATE does not imply DESCRIBE_CONFIGS),
	// and a topic without ACLs is open.
	mustCreateACLs(t, cl, aclSpec{kmsg.ACLResourceTypeTopic, "made-", prefix, anonymous, kmsg.ACLOperationCreate, allowed})
	createReq := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"made-x", "plain-x"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 2, 1
		createReq.Topics = append(createReq.Topics, rt)
	}
	createResp, err := createReq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	made, plain := createResp.Topics[0], createResp.Topics[1]
	requireCode(t, "create made-x", kerr.ErrorForCode(made.ErrorCode), nil)
	requireCode(t, "made-x's configs without DESCRIBE_CONFIGS", kerr.ErrorForCode(made.ConfigErrorCode), kerr.TopicAuthorizationFailed)
	if len(made.Configs) != 0 || made.NumPartitions != -1 || made.ReplicationFactor != -1 {
		t.Errorf("made-x without DESCRIBE_CONFIGS: %d configs, %d partitions, RF %d; want none, -1, -1", len(made.Configs), made.NumPartitions, made.ReplicationFactor)
	}
	requireCode(t, "create plain-x", kerr.ErrorForCode(plain.ErrorCode), nil)
	requireCode(t, "plain-x's configs", kerr.ErrorForCode(plain.ConfigErrorCode), nil)
	if len(plain.Configs) == 0 || plain.NumPartitions != 2 {
		t.Errorf("plain-x (no ACL): %d configs, %d partitions; want its configs and 2", len(plain.Configs), plain.NumPartitions)
	}
}

func TestACLsDefaultDenyAndSuperUsers(t *testing.T) {
	// Without allow.everyone.if.no.acl.found, nothing is allowed but to super users.
	addr := clustertest.StartOne(t, standardAuthz)
	cl := newClient(t, addr)
	errs := createACLs(t, cl, aclSpec{kmsg.ACLResourceTypeTopic, "t", literal, anonymous, kmsg.ACLOperationAll, allowed})
	requireCode(t, "CreateAcls without ALTER on the cluster", errs[0], kerr.ClusterAuthorizationFailed)
	_, err := kadm.NewClient(cl).CreateTopic(testCtx(t), 1, 1, nil, "t")
	requireCode(t, "CreateTopics without CREATE", err, kerr.TopicAuthorizationFailed)

	super := clustertest.StartOne(t, standardAuthz, "super.users=User:admin;"+anonymous)
	scl := newClient(t, super)
	mustCreateACLs(t, scl, aclSpec{kmsg.ACLResourceTypeTopic, "t", literal, anonymous, kmsg.ACLOperationAll, refused})
	if _, err := kadm.NewClient(scl).CreateTopic(testCtx(t), 1, 1, nil, "t"); err != nil {
		t.Fatalf("a super user creates a topic: %v", err)
	}
	if err := produceOne(t, scl, "t"); err != nil {
		t.Fatalf("a super user denied by an ACL produces anyway: %v", err)
	}

	// ACLs off: the ACL APIs answer SECURITY_DISABLED, everything else works.
	off := clustertest.StartOne(t)
	errs = createACLs(t, newClient(t, off), aclSpec{kmsg.ACLResourceTypeTopic, "t", literal, anonymous, kmsg.ACLOperationAll, allowed})
	requireCode(t, "CreateAcls with ACLs off", errs[0], kerr.SecurityDisabled)
}

func TestCreateACLsValidation(t *testing.T) {
	addr := clustertest.StartOne(t, standardAuthz, allowIfNoACL)
	cl := newClient(t, addr)
	errs := createACLs(t, cl,
		aclSpec{kmsg.ACLResourceTypeCluster, "not-the-cluster", literal, anonymous, kmsg.ACLOperationAlter, allowed},
		aclSpec{kmsg.ACLResourceTypeTopic, "t", literal, "alice", kmsg.ACLOperationRead, allowed},
		aclSpec{kmsg.ACLResourceTypeGroup, "g", literal, anonymous, kmsg.ACLOperationWrite, allowed},
		aclSpec{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeMatch, anonymous, kmsg.ACLOperationRead, allowed},
		aclSpec{kmsg.ACLResourceTypeTopic, "t", literal, anonymous, kmsg.ACLOperationRead, allowed},
	)
	for i, want := range []string{clusterResource, "Type:Name", "supports operations", "pattern type"} {
		requireCode(t, "invalid ACL", errs[i], kerr.InvalidRequest)
		if !strings.Contains(errs[i].Error(), want) {
			t.Errorf("error %q does not say %q", errs[i], want)
		}
	}
	if errs[4] != nil {
		t.Fatalf("the valid ACL of the request: %v", errs[4])
	}
}
