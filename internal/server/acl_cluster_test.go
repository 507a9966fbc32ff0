package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestACLsAcrossNodes: three nodes with ACLs on, reaching each other over a SASL_SSL
// inter-broker listener as the super user User:node; clients on PLAINTEXT are
// User:ANONYMOUS. An ACL created through a node that is not the active controller is
// forwarded, and once CreateAcls answers, every node enforces it (a Metadata request
// for the topic sent to each node is refused); deleted through another node, every
// node lets the topic be described again as soon as DeleteAcls answers. DescribeAcls
// on the third node lists what the first created.
func TestACLsAcrossNodes(t *testing.T) {
	pki := newTestPKI(t)
	nodes := startCluster(t, 3,
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
		"ssl.keystore.location="+pki.NodeFile, "ssl.truststore.location="+pki.CAFile,
		"inter.broker.sasl.username=node", "inter.broker.sasl.password=node-secret",
		"listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"inter.broker.listener.name=INTERNAL",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:node", "allow.everyone.if.no.acl.found=true")
	c := nodes[0].c
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	createReq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "secret", 1, 3
	createReq.Topics = append(createReq.Topics, ct)
	createResp, err := createReq.RequestWith(ctx, cl)
	testutil.NoError(t, err, "create topic secret")
	testutil.NoError(t, kerr.ErrorForCode(createResp.Topics[0].ErrorCode), "create topic secret")

	ctrl := c.WaitController(t, -1, 30*time.Second)
	var others []int32 // the nodes that are not the active controller
	for _, tn := range nodes {
		if tn.id != ctrl {
			others = append(others, tn.id)
		}
	}
	// describeOnEach sends Metadata for secret to every node itself and returns each
	// node's topic error.
	describeOnEach := func() map[int32]error {
		got := map[int32]error{}
		for _, tn := range nodes {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			topic := "secret"
			rt.Topic = &topic
			req.Topics = append(req.Topics, rt)
			resp, err := cl.Broker(int(tn.id)).Request(ctx, req)
			testutil.NoError(t, err, "Metadata on node %d", tn.id)
			got[tn.id] = kerr.ErrorForCode(resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode)
		}
		return got
	}
	for id, err := range describeOnEach() {
		testutil.NoError(t, err, "describe secret on node %d before any ACL", id)
	}

	// secret becomes alice's alone: ANONYMOUS may no longer describe it.
	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "secret", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
	create.Creations = append(create.Creations, cr)
	resp, err := cl.Broker(int(others[0])).Request(ctx, create)
	testutil.NoError(t, err, "CreateAcls on node %d", others[0])
	res := resp.(*kmsg.CreateACLsResponse).Results[0]
	testutil.NoError(t, kerr.ErrorForCode(res.ErrorCode), "CreateAcls on node %d", others[0])
	for id, err := range describeOnEach() {
		if err != kerr.TopicAuthorizationFailed {
			t.Errorf("node %d, right after CreateAcls answered on node %d: describe secret gave %v, want TOPIC_AUTHORIZATION_FAILED", id, others[0], err)
		}
	}

	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dresp, err := cl.Broker(int(others[1])).Request(ctx, describe)
	testutil.NoError(t, err, "DescribeAcls on node %d", others[1])
	described := dresp.(*kmsg.DescribeACLsResponse)
	testutil.NoError(t, kerr.ErrorForCode(described.ErrorCode), "DescribeAcls on node %d", others[1])
	if len(described.Resources) != 1 || described.Resources[0].ResourceName != "secret" || len(described.Resources[0].ACLs) != 1 ||
		described.Resources[0].ACLs[0].Principal != "User:alice" {
		t.Fatalf("DescribeAcls on node %d: %+v, want alice's ACL on secret", others[1], described.Resources)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	name := "secret"
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeLiteral
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	resp, err = cl.Broker(int(others[1])).Request(ctx, del)
	testutil.NoError(t, err, "DeleteAcls on node %d", others[1])
	dr := resp.(*kmsg.DeleteACLsResponse).Results[0]
	testutil.NoError(t, kerr.ErrorForCode(dr.ErrorCode), "DeleteAcls on node %d", others[1])
	testutil.Equal(t, len(dr.MatchingACLs), 1, "ACLs deleted")
	for id, err := range describeOnEach() {
		testutil.NoError(t, err, "node %d, right after DeleteAcls answered on node %d: describe secret", id, others[1])
	}
}
