package kafka

// ShareGroupHeartbeat: v0-1 (KIP-932).
//
// Share group membership on the group's coordinator (the leader of its
// __consumer_offsets partition, FindCoordinator key type 0): epoch 0 joins with the
// client's member id, -1 leaves, any other epoch must be the member's (else
// FENCED_MEMBER_EPOCH). The assignment is the simple assignor's (internal/share
// groups.go): with more members than partitions, members share partitions. The
// session timeout and heartbeat interval are the group's share.session.timeout.ms and
// share.heartbeat.interval.ms, else group.share.*. Membership is not persisted: after
// a coordinator move members get UNKNOWN_MEMBER_ID and rejoin with their ids.

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(76, 0, 1, handleShareGroupHeartbeat) }

func handleShareGroupHeartbeat(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(code int16) (kmsg.Response, error) {
		resp.ErrorCode = code
		return resp, nil
	}
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(req.GroupID)); err != nil {
		resp.ErrorMessage = errorMessage(err)
		return fail(errorCode(err))
	}
	if s.share == nil {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	if strings.TrimSpace(req.GroupID) == "" || req.MemberID == "" || len(req.MemberID) > 36 ||
		req.MemberEpoch < -1 || req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0 {
		return fail(kerr.InvalidRequest.Code)
	}
	for _, t := range req.SubscribedTopicNames {
		if !s.allowed(r, metadata.ACLOpDescribe, auth.Topic(t)) {
			return fail(kerr.TopicAuthorizationFailed.Code)
		}
	}
	im := s.leadership.Image()
	hr := share.HeartbeatRequest{
		GroupID: req.GroupID, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, RackID: req.RackID,
		SubscribedTopicNames: req.SubscribedTopicNames, ClientID: r.clientID, ClientHost: clientHost(r),
		Topics: func(name string) (share.TopicInfo, bool) {
			t := im.Topics[name]
			if t == nil {
				return share.TopicInfo{}, false
			}
			return share.TopicInfo{ID: t.ID, Partitions: int32(len(t.Partitions))}, true
		},
		SessionTimeout: time.Duration(s.groupConfigInt(req.GroupID, "share.session.timeout.ms", 0)) * time.Millisecond,
		Interval:       time.Duration(s.groupConfigInt(req.GroupID, "share.heartbeat.interval.ms", 0)) * time.Millisecond,
	}
	res, err := s.share.groups.Heartbeat(hr, time.Now())
	if errors.Is(err, share.ErrNotShareGroup) {
		resp.ErrorMessage = reasonMessage(err) // Kafka's "Group G is not a share group."
	}
	if err != nil {
		return fail(errorCode(err))
	}
	id := req.MemberID
	resp.MemberID, resp.MemberEpoch = &id, res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval / time.Millisecond)
	if res.Assignment != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, tp := range res.Assignment {
			t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
			a.TopicPartitions = append(a.TopicPartitions, t)
		}
		resp.Assignment = &a
	}
	return resp, nil
}
