package kafka

// Heartbeat: v0-4.
//
// Keeps a member's session alive. REBALANCE_IN_PROGRESS tells it to rejoin;
// ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID that it was dropped; FENCED_INSTANCE_ID
// (v3+, static members) that another instance took its place.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(12, 0, 4, handleHeartbeat) }

func handleHeartbeat(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(req.Group)); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	gc := s.groupCoordinator()
	if gc == nil {
		resp.ErrorCode = groupErrorCode(errNoCoordinator)
		return resp, nil
	}
	resp.ErrorCode = groupErrorCode(gc.Heartbeat(ctx, group.HeartbeatRequest{
		GroupID: req.Group, MemberID: req.MemberID, InstanceID: req.InstanceID, Generation: req.Generation,
	}))
	return resp, nil
}
