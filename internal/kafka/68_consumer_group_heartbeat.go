package kafka

// ConsumerGroupHeartbeat: v0-1 (KIP-848).
//
// The consumer group protocol: the broker assigns (group.consumer.assignors, uniform
// by default, or the member's ServerAssignor) and reconciles each member through its
// heartbeats; a partition reaches a new member only after its previous owner reported
// it revoked (internal/group, consumer_*.go). The member epoch 0 joins, -1 leaves, -2
// leaves temporarily (static members). Topics are named by id. v1 (Kafka 4.0):
// SubscribedTopicRegex (RE2 syntax, matched against whole topic names, internal topics
// included) and client-generated member ids; a v0 join without a member id gets one
// generated here. The session timeout and heartbeat interval are the group's
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms (GROUP configs), or
// the broker's group.consumer.* settings. A group with classic members answers
// GROUP_ID_NOT_FOUND ("not a consumer group"): Runnel does not convert groups online.
// Rack ids are stored and described but the assignors do not use them.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(68, 0, 1, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(req.Group)); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	gc := s.groupCoordinator()
	if gc == nil {
		resp.ErrorCode = groupErrorCode(errNoCoordinator)
		return resp, nil
	}
	im := s.leadership.Image()
	hr := group.ConsumerHeartbeatRequest{
		GroupID: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceID: req.InstanceID, RackID: req.RackID,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		SubscribedTopicNames: req.SubscribedTopicNames, SubscribedTopicRegex: req.SubscribedTopicRegex,
		ServerAssignor: req.ServerAssignor, ClientID: r.clientID, ClientHost: clientHost(r),
		Topics: group.ImageTopics(im), GroupConfigs: config.GroupOwnConfigs(im.Configs, req.Group),
	}
	if req.RebalanceTimeoutMillis < 0 {
		hr.RebalanceTimeout = -1
	}
	if req.Version == 0 && req.MemberID == "" && req.MemberEpoch == 0 {
		hr.MemberID = newConsumerMemberID() // v0: the broker names new members
	}
	if req.Topics != nil {
		hr.Owned = make([]group.TopicPartitions, 0, len(req.Topics))
		for _, t := range req.Topics {
			hr.Owned = append(hr.Owned, group.TopicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	res := gc.ConsumerHeartbeat(ctx, hr)
	resp.ErrorCode = groupErrorCode(res.Err)
	if res.Err != nil {
		if res.ErrMessage != "" {
			resp.ErrorMessage = &res.ErrMessage
		}
		return resp, nil
	}
	id := res.MemberID
	resp.MemberID, resp.MemberEpoch = &id, res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval / time.Millisecond)
	if res.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, tp := range res.Assignment {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = tp.TopicID, tp.Partitions
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// newConsumerMemberID is a random member id as Kafka makes them (a base64 UUID).
func newConsumerMemberID() string {
	var u [16]byte
	rand.Read(u[:])
	return base64.RawURLEncoding.EncodeToString(u[:])
}
