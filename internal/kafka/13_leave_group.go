package kafka

// LeaveGroup: v0-5.
//
// v0-2 name one member; the response's error is that member's. v3+ batch members, by
// member id or, with an empty member id, by group.instance.id (KIP-345); each member
// gets its own error and the top-level error is for the group (NOT_COORDINATOR, ...).
// A member that leaves triggers a rebalance of the others. v5+: reasons (ignored).

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(13, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(req.Group)); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	gc := s.groupCoordinator()
	if gc == nil {
		resp.ErrorCode = groupErrorCode(errNoCoordinator)
		return resp, nil
	}
	var members []group.LeaveMember
	if req.Version < 3 {
		members = []group.LeaveMember{{MemberID: req.MemberID}}
	}
	for _, m := range req.Members {
		lm := group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID}
		if m.Reason != nil {
			lm.Reason = *m.Reason
		}
		members = append(members, lm)
	}
	errs, err := gc.Leave(ctx, req.Group, members)
	if err != nil {
		resp.ErrorCode = groupErrorCode(err)
		return resp, nil
	}
	if req.Version < 3 {
		resp.ErrorCode = groupErrorCode(errs[0])
		return resp, nil
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, groupErrorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
