package kafka_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestMetadataACLs: with ACLs on, an all-topics Metadata lists only the topics the
// principal may describe, a named topic it may not describe is
// TOPIC_AUTHORIZATION_FAILED (existing or not), and auto-creation needs CREATE
// (here the cluster has no ACL, so allow.everyone.if.no.acl.found grants it).
func TestMetadataACLs(t *testing.T) {
	addr := clustertest.StartOne(t, standardAuthz, allowIfNoACL)
	cl := newClient(t, addr)
	ctx := testCtx(t)
	for _, topic := range []string{"secret", "open"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	mustCreateACLs(t, cl,
		aclSpec{kmsg.ACLResourceTypeTopic, "secret", literal, "User:alice", kmsg.ACLOperationAll, allowed},
		aclSpec{kmsg.ACLResourceTypeTopic, "hidden-", prefix, "User:alice", kmsg.ACLOperationAll, allowed},
	)

	all := kmsg.NewPtrMetadataRequest() // nil Topics: all topics
	resp, err := all.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tp := range resp.Topics {
		listed = append(listed, *tp.Topic)
	}
	if !slices.Contains(listed, "open") || slices.Contains(listed, "secret") {
		t.Errorf("all-topics Metadata as %s lists %v; want open and not secret", anonymous, listed)
	}

	named := func(topic string, autoCreate bool) int16 {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &topic
		req.Topics, req.AllowAutoTopicCreation = append(req.Topics, rt), autoCreate
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode
	}
	for _, c := range []struct {
		topic      string
		autoCreate bool
		want       *kerr.Error
	}{
		{"secret", false, kerr.TopicAuthorizationFailed},
		{"hidden-none", false, kerr.TopicAuthorizationFailed}, // missing and not describable: the same answer
		{"missing", false, kerr.UnknownTopicOrPartition},      // describable (no ACL), not created
	} {
		if got := named(c.topic, c.autoCreate); got != c.want.Code {
			t.Errorf("Metadata of %s (auto-create %v): %v, want %v", c.topic, c.autoCreate, kerr.ErrorForCode(got), c.want)
		}
	}
	if got := named("open", false); got != 0 {
		t.Errorf("Metadata of open: %v", kerr.ErrorForCode(got))
	}
	if got := named("fresh", true); got != 0 && got != kerr.LeaderNotAvailable.Code {
		t.Errorf("Metadata auto-creating fresh (CREATE on the cluster allowed): %v", kerr.ErrorForCode(got))
	}
}
