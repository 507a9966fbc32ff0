package kafka

// SyncGroup: v0-5.
//
// The leader sends every member's assignment; once it is stored in __consumer_offsets
// (acks=all) every member gets its own. Followers' requests wait for the leader's.
// v3+: static members. v5+: protocol type and name are checked against the group's
// (INCONSISTENT_GROUP_PROTOCOL) and returned.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(14, 0, 5, handleSyncGroup) }

func handleSyncGroup(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(req.Group)); err != nil {
		resp.ErrorCode, resp.MemberAssignment = errorCode(err), []byte{}
		return resp, nil
	}
	gc := s.groupCoordinator()
	if gc == nil {
		resp.ErrorCode = groupErrorCode(errNoCoordinator)
		return resp, nil
	}
	sr := group.SyncRequest{
		GroupID: req.Group, MemberID: req.MemberID, InstanceID: req.InstanceID, Generation: req.Generation,
		ProtocolType: req.ProtocolType, Protocol: req.Protocol,
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments = append(sr.Assignments, group.Assignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	res := gc.Sync(ctx, sr)
	resp.ErrorCode = groupErrorCode(res.Err)
	if res.Err == nil {
		pt, p := res.ProtocolType, res.Protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
		resp.MemberAssignment = res.Assignment
	}
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp, nil
}
