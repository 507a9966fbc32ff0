package kafka

// ShareGroupDescribe: v0-1 (KIP-932).
//
// Each group's membership as its coordinator has it: state (Empty, Stable), group and
// assignment epochs (equal: the simple assignor assigns at once), the assignor
// ("simple"), members with epochs, subscriptions and assignments. A group this
// coordinator does not have as a share group is GROUP_ID_NOT_FOUND.

import (
	"context"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(77, 0, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	im := s.leadership.Image()
	for _, id := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		resp.Groups = append(resp.Groups, s.describeShareGroup(r, im, req, g))
	}
	return resp, nil
}

func (s *Server) describeShareGroup(r *request, im *metadata.Image, req *kmsg.ShareGroupDescribeRequest, g kmsg.ShareGroupDescribeResponseGroup) kmsg.ShareGroupDescribeResponseGroup {
	if err := s.authorize(r, metadata.ACLOpDescribe, auth.Group(g.GroupID)); err != nil {
		g.ErrorCode, g.ErrorMessage = errorCode(err), errorMessage(err)
		return g
	}
	if s.share == nil {
		g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return g
	}
	d, ok, err := s.share.groups.Describe(g.GroupID, time.Now())
	if err != nil {
		g.ErrorCode = errorCode(err)
		return g
	}
	if !ok {
		g.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + g.GroupID + " not found."
		g.ErrorMessage = &msg
		return g
	}
	g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = d.State, d.GroupEpoch, d.GroupEpoch, "simple"
	if req.IncludeAuthorizedOperations {
		g.AuthorizedOperations = s.authorizedOperations(r, auth.Group(g.GroupID))
	}
	for _, m := range d.Members {
		km := kmsg.NewShareGroupDescribeResponseGroupMember()
		km.MemberID, km.RackID, km.MemberEpoch = m.MemberID, m.RackID, m.MemberEpoch
		km.ClientID, km.ClientHost, km.SubscribedTopicNames = m.ClientID, m.ClientHost, m.SubscribedTopicNames
		for _, tp := range m.Assignment {
			kt := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			kt.TopicID, kt.Partitions = tp.TopicID, tp.Partitions
			if t := im.TopicByID(tp.TopicID); t != nil {
				kt.Topic = t.Name
			}
			km.Assignment.TopicPartitions = append(km.Assignment.TopicPartitions, kt)
		}
		g.Members = append(g.Members, km)
	}
	return g
}
