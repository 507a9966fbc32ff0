package share_test

import (
	"context"
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumeShare runs a franz-go share consumer of group on topic until it has accepted
// want records (fails after the context ends) and returns the accepted values by
// partition.
func consumeShare(t *testing.T, ctx context.Context, addr, group, topic string, want int) map[int32][]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32][]string{}
	n := 0
	for n < want {
		if ctx.Err() != nil {
			t.Fatalf("share group %s: accepted %d of %d records before the deadline: %v", group, n, want, got)
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			r.Ack(kgo.AckAccept)
			n++
		})
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("share group %s: flush acks: %v", group, err)
		}
	}
	return got
}

// describeShareOffsets returns group's start offsets and lags by partition of topic,
// or the group's error.
func describeShareOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, group string) (map[int32][2]int64, error) {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return nil, err
	}
	out := map[int32][2]int64{}
	for _, rt := range g.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("describe %s %s-%d: %v", group, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			out[rp.Partition] = [2]int64{rp.StartOffset, rp.Lag}
		}
	}
	return out, nil
}

// joinRaw makes member a share group member of group over cl (epoch 0); it returns
// the heartbeat's error.
func joinRaw(ctx context.Context, cl *kgo.Client, group, member, topic string, epoch int32) (*kmsg.ShareGroupHeartbeatResponse, error) {
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch = group, member, epoch
	if epoch == 0 {
		hb.SubscribedTopicNames = []string{topic}
	}
	resp, err := hb.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	return resp, kerr.ErrorForCode(resp.ErrorCode)
}

// TestShareGroupAdmin drives the outside surface of share groups on one node:
// ListGroups v5 (type share), DescribeGroups (not a classic group), group ids
// exclusive across kinds, DescribeShareGroupOffsets (start offsets and lags),
// AlterShareGroupOffsets (refused while the group has a member; consumption resumes
// at the new offset), DeleteShareGroupOffsets, DeleteGroups, FindCoordinator key type
// 2 and __share_group_state internal and closed to clients' produce.
func TestShareGroupAdmin(t *testing.T) {
	const topic, group = "share-admin", "share-admin-g"
	addr, ctx, cl, topicID := startShareNode(t, 60*time.Second, topic, 2)
	adm := kadm.NewClient(cl)
	setGroupConfig(t, ctx, cl, group, "share.auto.offset.reset", "earliest")
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(strconv.Itoa(i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumeShare(t, ctx, addr, group, topic, 20)

	// ListGroups v5: the share group with its type; a type filter keeps it.
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"Share"}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil || lresp.ErrorCode != 0 {
		t.Fatalf("list groups: %v %v", err, kerr.ErrorForCode(lresp.ErrorCode))
	}
	if len(lresp.Groups) != 1 || lresp.Groups[0].Group != group || lresp.Groups[0].GroupType != "share" || lresp.Groups[0].ProtocolType != "share" {
		t.Fatalf("ListGroups types=[share]: %+v, want only %s (type share, protocol type share)", lresp.Groups, group)
	}
	lreq.TypesFilter = []string{"classic"}
	if lresp, err = lreq.RequestWith(ctx, cl); err != nil || len(lresp.Groups) != 0 {
		t.Fatalf("ListGroups types=[classic]: %+v %v, want none", lresp.Groups, err)
	}

	// DescribeGroups v6 answers as Kafka 4: not a classic group.
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Version, dreq.Groups = 6, []string{group}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code || g.ErrorMessage == nil || *g.ErrorMessage != "Group "+group+" is not a classic group." {
		t.Fatalf("DescribeGroups of share group: code %d message %v", g.ErrorCode, g.ErrorMessage)
	}

	// Group ids are exclusive: a classic join of the share group's id, a share join of
	// a classic group's id.
	jreq := kmsg.NewPtrJoinGroupRequest()
	jreq.Group, jreq.ProtocolType, jreq.SessionTimeoutMillis, jreq.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	jreq.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	jresp, err := jreq.RequestWith(ctx, cl)
	if err != nil || jresp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup of share group %s: %v %v, want INCONSISTENT_GROUP_PROTOCOL", group, err, kerr.ErrorForCode(jresp.ErrorCode))
	}
	const classic = "share-admin-classic"
	if err := adm.CommitAllOffsets(ctx, classic, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 1})); err != nil {
		t.Fatal(err)
	}
	if resp, err := joinRaw(ctx, cl, classic, "m-classic-000000000000000000000000", topic, 0); err != kerr.GroupIDNotFound || resp.ErrorMessage == nil || *resp.ErrorMessage != "Group "+classic+" is not a share group." {
		t.Fatalf("ShareGroupHeartbeat of classic group %s: %v (%+v), want GROUP_ID_NOT_FOUND not a share group", classic, err, resp)
	}

	// Describe offsets: every record accepted, so both start at 10 with lag 0.
	offs, err := describeShareOffsets(t, ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	if offs[0] != [2]int64{10, 0} || offs[1] != [2]int64{10, 0} || len(offs) != 2 {
		t.Fatalf("share offsets %v, want partitions 0 and 1 at start 10, lag 0", offs)
	}
	if _, err := describeShareOffsets(t, ctx, cl, "share-admin-absent"); err != kerr.GroupIDNotFound {
		t.Fatalf("describe offsets of an absent group: %v, want GROUP_ID_NOT_FOUND", err)
	}

	alter := func(off int64) (*kmsg.AlterShareGroupOffsetsResponse, error) {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: off}}
		req.Topics = append(req.Topics, rt)
		return req.RequestWith(ctx, cl)
	}
	// With a member: NON_EMPTY_GROUP.
	const member = "share-admin-member-00000000000000000"
	if _, err := joinRaw(ctx, cl, group, member, topic, 0); err != nil {
		t.Fatal(err)
	}
	if resp, err := alter(3); err != nil || resp.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v %+v, want NON_EMPTY_GROUP", err, resp)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{group}
	if resp, err := dg.RequestWith(ctx, cl); err != nil || resp.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v %+v, want NON_EMPTY_GROUP", err, resp)
	}
	hb, err := joinRaw(ctx, cl, group, member, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := joinRaw(ctx, cl, group, member, topic, -1); err != nil {
		t.Fatalf("leave (epoch %d -> -1): %v", hb.MemberEpoch, err)
	}
	resp, err := alter(3)
	if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].TopicID != topicID {
		t.Fatalf("alter of the empty group: %v %+v", err, resp)
	}
	if offs, _ = describeShareOffsets(t, ctx, cl, group); offs[0] != [2]int64{3, 7} {
		t.Fatalf("after alter to 3: partition 0 %v, want start 3 lag 7", offs[0])
	}

	// A partition the topic lacks, or a topic that does not exist, answers
	// UNKNOWN_TOPIC_OR_PARTITION saying which.
	wantUnknown := func(what string, code int16, msg *string, want string) {
		t.Helper()
		if code != kerr.UnknownTopicOrPartition.Code || msg == nil || *msg != want {
			t.Fatalf("%s: %v message %v, want UNKNOWN_TOPIC_OR_PARTITION %q", what, kerr.ErrorForCode(code), msg, want)
		}
	}
	areq := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	areq.GroupID = group
	areq.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{
		{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 5, StartOffset: 1}}},
		{Topic: "share-admin-none", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 1}}},
	}
	aresp, err := areq.RequestWith(ctx, cl)
	if err != nil || len(aresp.Topics) != 2 {
		t.Fatalf("alter of absent partitions: %v %+v", err, aresp)
	}
	wantUnknown("alter "+topic+"-5", aresp.Topics[0].Partitions[0].ErrorCode, aresp.Topics[0].Partitions[0].ErrorMessage, "topic "+topic+" has no partition 5 (it has 2)")
	wantUnknown("alter share-admin-none-0", aresp.Topics[1].Partitions[0].ErrorCode, aresp.Topics[1].Partitions[0].ErrorMessage, "topic share-admin-none is unknown")
	dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dso.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{-1}}}}}
	dsoResp, err := dso.RequestWith(ctx, cl)
	if err != nil || dsoResp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe offsets of %s-(-1): %v %+v", topic, err, dsoResp)
	}
	dp := dsoResp.Groups[0].Topics[0].Partitions[0]
	wantUnknown("describe "+topic+"-(-1)", dp.ErrorCode, dp.ErrorMessage, "topic "+topic+" has no partition -1 (it has 2)")
	dno := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	dno.GroupID = group
	dno.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "share-admin-none"}}
	dnoResp, err := dno.RequestWith(ctx, cl)
	if err != nil || dnoResp.ErrorCode != 0 {
		t.Fatalf("delete offsets of an absent topic: %v %+v", err, dnoResp)
	}
	wantUnknown("delete offsets of share-admin-none", dnoResp.Topics[0].ErrorCode, dnoResp.Topics[0].ErrorMessage, "topic share-admin-none is unknown")
	// Consumption resumes at 3 on partition 0 (and partition 1 has nothing left).
	got := consumeShare(t, ctx, addr, group, topic, 7)
	if len(got[1]) != 0 || len(got[0]) != 7 || got[0][0] != "3" || got[0][6] != "9" {
		t.Fatalf("after alter to 3: consumed %v, want partition 0 records 3..9 only", got)
	}

	// DeleteShareGroupOffsets drops the topic's state.
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = group
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
	if dresp, err := del.RequestWith(ctx, cl); err != nil || dresp.ErrorCode != 0 || dresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete share offsets: %v %+v", err, dresp)
	}
	if offs, err = describeShareOffsets(t, ctx, cl, group); err != nil || len(offs) != 0 {
		t.Fatalf("after delete offsets: %v %v, want no partitions", offs, err)
	}

	// FindCoordinator key type 2: the leader of the group's __share_group_state partition.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 2
	good, bad := group+":"+base64.RawURLEncoding.EncodeToString(topicID[:])+":0", group+":nope:0"
	fc.CoordinatorKeys = []string{good, bad}
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	// franz-go shards FindCoordinator by key and merges the answers in any order.
	coords := map[string]kmsg.FindCoordinatorResponseCoordinator{}
	for _, c := range fresp.Coordinators {
		coords[c.Key] = c
	}
	if c, ok := coords[good]; !ok || c.ErrorCode != 0 || c.NodeID != 1 || c.Port <= 0 {
		t.Fatalf("FindCoordinator share key %s: %+v (answered %v)", good, c, ok)
	}
	if c, ok := coords[bad]; !ok || c.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("FindCoordinator malformed share key %s: %+v (answered %v), want INVALID_REQUEST", bad, c, ok)
	}

	// __share_group_state is internal and closed to clients.
	td, err := adm.ListTopicsWithInternal(ctx, "__share_group_state")
	if err != nil || !td["__share_group_state"].IsInternal {
		t.Fatalf("__share_group_state metadata: %+v %v, want internal", td["__share_group_state"], err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "__share_group_state", Partition: 0, Value: []byte("x")}).FirstErr()
	if err != kerr.InvalidTopicException {
		t.Fatalf("client produce to __share_group_state: %v, want INVALID_TOPIC_EXCEPTION", err)
	}

	// DeleteGroups: an empty share group goes, with its state.
	if resp, err := dg.RequestWith(ctx, cl); err != nil || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete the empty share group: %v %+v", err, resp)
	}
	if lresp, err = lreq.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	lreq.TypesFilter = nil
	if lresp, err = lreq.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	for _, g := range lresp.Groups {
		if g.Group == group {
			t.Fatalf("deleted share group %s still listed", group)
		}
	}
	if _, err := describeShareOffsets(t, ctx, cl, group); err != kerr.GroupIDNotFound {
		t.Fatalf("describe offsets of the deleted group: %v, want GROUP_ID_NOT_FOUND", err)
	}
}
