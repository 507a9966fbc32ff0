package group_test

// Protocol-level checks of the group APIs at pinned versions, with raw kmsg requests
// sent to the node: the version-specific behaviour clients rely on.

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// raw sends req to the node at exactly version v.
func raw[T kmsg.Response](t *testing.T, req kmsg.Request, v int16) T {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(req.Key(), v)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr(t)), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.Broker(1).Request(context.Background(), req)
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	if resp.GetVersion() != v {
		t.Fatalf("%s answered at v%d, want v%d", kmsg.NameForKey(req.Key()), resp.GetVersion(), v)
	}
	return resp.(T)
}

func code(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func joinRequest(group, member string, instance *string, protocol string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.InstanceID = group, member, instance
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 3000, 5000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = protocol
	p.Metadata = (&kmsg.ConsumerMemberMetadata{Topics: []string{"raw"}}).AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

func TestGroupProtocolVersions(t *testing.T) {
	createTopic(t, "raw", 1, 0)

	// FindCoordinator: single key (v3), batched (v4+), transactions (internal/txn).
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g-raw"
	r3 := raw[*kmsg.FindCoordinatorResponse](t, fc, 3)
	code(t, "FindCoordinator v3", r3.ErrorCode, nil)
	if r3.NodeID != 1 || r3.Port == 0 {
		t.Fatalf("FindCoordinator v3: %+v", r3)
	}
	fc = kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g-raw", "another"}
	r4 := raw[*kmsg.FindCoordinatorResponse](t, fc, 4)
	if len(r4.Coordinators) != 2 || r4.Coordinators[0].ErrorCode != 0 || r4.Coordinators[1].Key != "another" || r4.Coordinators[1].NodeID != 1 {
		t.Fatalf("FindCoordinator v4: %+v", r4.Coordinators)
	}
	fc.CoordinatorType = 1
	r4 = raw[*kmsg.FindCoordinatorResponse](t, fc, 4)
	if c := r4.Coordinators[0]; c.ErrorCode != 0 && c.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("FindCoordinator for a transactional id: error %d, want none or COORDINATOR_NOT_AVAILABLE while __transaction_state is created", c.ErrorCode)
	}

	// JoinGroup v4+: MEMBER_ID_REQUIRED first (KIP-394).
	jr := raw[*kmsg.JoinGroupResponse](t, joinRequest("g-raw", "", nil, "range"), 4)
	code(t, "first JoinGroup v4", jr.ErrorCode, kerr.MemberIDRequired)
	member := jr.MemberID
	if member == "" {
		t.Fatal("MEMBER_ID_REQUIRED without a member id")
	}
	jr = raw[*kmsg.JoinGroupResponse](t, joinRequest("g-raw", member, nil, "range"), 7)
	code(t, "second JoinGroup", jr.ErrorCode, nil)
	if jr.Generation != 1 || jr.LeaderID != member || len(jr.Members) != 1 || *jr.Protocol != "range" || *jr.ProtocolType != "consumer" {
		t.Fatalf("JoinGroup v7: %+v", jr)
	}
	bad := joinRequest("g-raw", "", nil, "range")
	bad.SessionTimeoutMillis = 500
	code(t, "short session", raw[*kmsg.JoinGroupResponse](t, bad, 5).ErrorCode, kerr.InvalidSessionTimeout)
	code(t, "no common protocol", raw[*kmsg.JoinGroupResponse](t, joinRequest("g-raw", "", nil, "roundrobin"), 1).ErrorCode, kerr.InconsistentGroupProtocol)

	// SyncGroup v5 checks the protocol; the leader's assignment comes back.
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.Generation = "g-raw", member, 1
	wrong := "roundrobin"
	sg.Protocol = &wrong
	code(t, "SyncGroup with another protocol", raw[*kmsg.SyncGroupResponse](t, sg, 5).ErrorCode, kerr.InconsistentGroupProtocol)
	right := "range"
	sg.Protocol = &right
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = member, []byte("assigned")
	sg.GroupAssignment = append(sg.GroupAssignment, a)
	sr := raw[*kmsg.SyncGroupResponse](t, sg, 5)
	code(t, "SyncGroup", sr.ErrorCode, nil)
	if string(sr.MemberAssignment) != "assigned" || *sr.Protocol != "range" {
		t.Fatalf("SyncGroup v5: %+v", sr)
	}

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g-raw", member, 9
	code(t, "Heartbeat of another generation", raw[*kmsg.HeartbeatResponse](t, hb, 0).ErrorCode, kerr.IllegalGeneration)
	hb.Generation = 1
	code(t, "Heartbeat", raw[*kmsg.HeartbeatResponse](t, hb, 4).ErrorCode, nil)

	// OffsetCommit v2 per partition; unknown topics are refused.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.MemberID, oc.Generation = "g-raw", member, 1
	for _, topic := range []string{"raw", "no-such-topic"} {
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = topic
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Offset = 7
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
	}
	ocr := raw[*kmsg.OffsetCommitResponse](t, oc, 2)
	code(t, "OffsetCommit", ocr.Topics[0].Partitions[0].ErrorCode, nil)
	code(t, "OffsetCommit to an unknown topic", ocr.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)

	// OffsetFetch v1 (per-partition) and v8 (batched groups).
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g-raw"
	oft := kmsg.NewOffsetFetchRequestTopic()
	oft.Topic, oft.Partitions = "raw", []int32{0}
	of.Topics = append(of.Topics, oft)
	ofr := raw[*kmsg.OffsetFetchResponse](t, of, 1)
	if p := ofr.Topics[0].Partitions[0]; p.Offset != 7 || p.ErrorCode != 0 {
		t.Fatalf("OffsetFetch v1: %+v", ofr)
	}
	of = kmsg.NewPtrOffsetFetchRequest()
	for _, g := range []string{"g-raw", "g-unknown"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "raw", []int32{0}
		rg.Topics = append(rg.Topics, gt)
		of.Groups = append(of.Groups, rg)
	}
	ofr = raw[*kmsg.OffsetFetchResponse](t, of, 8)
	if len(ofr.Groups) != 2 || ofr.Groups[0].Topics[0].Partitions[0].Offset != 7 || ofr.Groups[1].Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("OffsetFetch v8: %+v", ofr.Groups)
	}
	of.Groups[0].Topics = nil // all committed partitions
	ofr = raw[*kmsg.OffsetFetchResponse](t, of, 8)
	if ts := ofr.Groups[0].Topics; len(ts) != 1 || ts[0].Topic != "raw" || ts[0].Partitions[0].Offset != 7 {
		t.Fatalf("OffsetFetch v8 of all partitions: %+v", ts)
	}

	// DescribeGroups: an unknown group is Dead before v6, GROUP_ID_NOT_FOUND from v6.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g-raw", "g-unknown"}
	dr := raw[*kmsg.DescribeGroupsResponse](t, dg, 5)
	if g := dr.Groups[0]; g.State != "Stable" || g.Protocol != "range" || len(g.Members) != 1 || string(g.Members[0].MemberAssignment) != "assigned" {
		t.Fatalf("DescribeGroups v5: %+v", g)
	}
	if g := dr.Groups[1]; g.State != "Dead" || g.ErrorCode != 0 {
		t.Fatalf("DescribeGroups v5 of an unknown group: %+v", g)
	}
	dr = raw[*kmsg.DescribeGroupsResponse](t, dg, 6)
	code(t, "DescribeGroups v6 of an unknown group", dr.Groups[1].ErrorCode, kerr.GroupIDNotFound)

	// ListGroups: states (v4) and types (v5) filters.
	listed := func(v int16, states, types []string) bool {
		lg := kmsg.NewPtrListGroupsRequest()
		lg.StatesFilter, lg.TypesFilter = states, types
		for _, g := range raw[*kmsg.ListGroupsResponse](t, lg, v).Groups {
			if g.Group == "g-raw" {
				return true
			}
		}
		return false
	}
	if !listed(0, nil, nil) || !listed(4, []string{"stable"}, nil) || listed(4, []string{"Empty"}, nil) ||
		!listed(5, nil, []string{"classic"}) || listed(5, nil, []string{"consumer"}) {
		t.Fatal("ListGroups filters")
	}

	dl := kmsg.NewPtrDeleteGroupsRequest()
	dl.Groups = []string{"g-raw", "g-unknown"}
	dlr := raw[*kmsg.DeleteGroupsResponse](t, dl, 2)
	code(t, "DeleteGroups of an active group", dlr.Groups[0].ErrorCode, kerr.NonEmptyGroup)
	code(t, "DeleteGroups of an unknown group", dlr.Groups[1].ErrorCode, kerr.GroupIDNotFound)

	// LeaveGroup v3+: batched members, by member id or by instance id.
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group = "g-raw"
	for _, id := range []string{member, "ghost"} {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		lv.Members = append(lv.Members, m)
	}
	lr := raw[*kmsg.LeaveGroupResponse](t, lv, 3)
	code(t, "LeaveGroup v3", lr.ErrorCode, nil)
	code(t, "LeaveGroup v3 member", lr.Members[0].ErrorCode, nil)
	code(t, "LeaveGroup v3 unknown member", lr.Members[1].ErrorCode, kerr.UnknownMemberID)
	lv = kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "g-raw", member
	code(t, "LeaveGroup v0 of a member that left", raw[*kmsg.LeaveGroupResponse](t, lv, 0).ErrorCode, kerr.UnknownMemberID)
}

func TestStaticMemberFencingAndLeaveByInstance(t *testing.T) {
	createTopic(t, "raw-static", 1, 0)
	inst := "instance-1"
	jr := raw[*kmsg.JoinGroupResponse](t, joinRequest("g-raw-static", "", &inst, "range"), 5)
	code(t, "static JoinGroup", jr.ErrorCode, nil)
	first := jr.MemberID
	// The same instance restarts: it gets a new id; the old one is fenced.
	jr = raw[*kmsg.JoinGroupResponse](t, joinRequest("g-raw-static", "", &inst, "range"), 5)
	code(t, "static rejoin", jr.ErrorCode, nil)
	if jr.MemberID == first {
		t.Fatal("a restarted static member keeps a new member id")
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.InstanceID, hb.Generation = "g-raw-static", first, &inst, jr.Generation
	code(t, "heartbeat of the fenced instance", raw[*kmsg.HeartbeatResponse](t, hb, 3).ErrorCode, kerr.FencedInstanceID)

	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group = "g-raw-static"
	m := kmsg.NewLeaveGroupRequestMember()
	m.InstanceID = &inst
	lv.Members = append(lv.Members, m)
	lr := raw[*kmsg.LeaveGroupResponse](t, lv, 4)
	code(t, "LeaveGroup by instance id", lr.Members[0].ErrorCode, nil)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g-raw-static"}
	if g := raw[*kmsg.DescribeGroupsResponse](t, dg, 4).Groups[0]; len(g.Members) != 0 {
		t.Fatalf("members left after leaving by instance id: %+v", g.Members)
	}
}
