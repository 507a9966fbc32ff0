package kafka

// JoinGroup: v0-9.
//
// Classic protocol only. The broker picks the protocol every member supports that most
// members prefer and hands the member list to the leader, which assigns; it never
// reads assignments, so eager and cooperative clients both work. v0 has no rebalance
// timeout (the session timeout is used). v4+: a new dynamic member first gets
// MEMBER_ID_REQUIRED with the id to join with (KIP-394). v5+: static members
// (group.instance.id, KIP-345). v7+: protocol type in the response. v8+: reason (logged
// nowhere). v9+: a restarted static leader of a stable group is told to skip the
// assignment (KIP-814); older leaders see the previous leader id instead. The request
// blocks until the join phase ends (up to the group's rebalance timeout).

import (
	"context"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(req.Group)); err != nil {
		resp.ErrorCode, resp.Generation, resp.MemberID = errorCode(err), -1, req.MemberID
		return resp, nil
	}
	gc := s.groupCoordinator()
	if gc == nil {
		resp.ErrorCode, resp.Generation, resp.MemberID = groupErrorCode(errNoCoordinator), -1, req.MemberID
		return resp, nil
	}
	jr := group.JoinRequest{
		GroupID: req.Group, MemberID: req.MemberID, InstanceID: req.InstanceID,
		ProtocolType: req.ProtocolType, ClientID: r.clientID, ClientHost: clientHost(r),
		SessionTimeout:         time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:       time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID:   req.Version >= 4,
		SupportsSkipAssignment: req.Version >= 9,
		Topics:                 group.ImageTopics(s.leadership.Image()),
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	if req.Reason != nil {
		jr.Reason = *req.Reason
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	res := gc.Join(ctx, jr)
	resp.ErrorCode = groupErrorCode(res.Err)
	resp.Generation, resp.MemberID, resp.LeaderID = res.Generation, res.MemberID, res.LeaderID
	resp.SkipAssignment = res.SkipAssignment
	if res.Err == nil {
		pt, p := res.ProtocolType, res.Protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
	}
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
